# Two encoder-decoder programs as tutorials and GitHub write them: the convolutional
# autoencoder of countless blog posts (Conv2d stride 2 down, nn.ConvTranspose2d(stride=2,
# padding=1, output_padding=1) up, nn.Sigmoid, MSELoss, Adam) on denoising digits with
# torch.clamp(x + noise_factor * torch.randn_like(x), 0., 1.); and milesial's Pytorch-UNet
# (unet_parts.py: DoubleConv with mid_channels, Down = MaxPool2d + DoubleConv, Up with
# nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True) or ConvTranspose2d, the
# F.pad by diffX/diffY for odd sizes, torch.cat([x2, x1], dim=1), OutConv; unet_model.py;
# utils/dice_score.py: dice_coeff/multiclass_dice_coeff/dice_loss; train.py's
# criterion(masks_pred, true_masks) + dice_loss(F.softmax(masks_pred, dim=1).float(),
# F.one_hot(true_masks, n_classes).permute(0, 3, 1, 2).float(), multiclass=True), RMSprop
# with foreach=True, ReduceLROnPlateau('max'), clip_grad_norm_). Images: local digits; the
# segmentation masks: the digit's pixels (class 1) on background (class 0).
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch import optim

import local_data


# -- the denoising convolutional autoencoder --------------------------------------------------
class ConvAutoencoder(nn.Module):
    def __init__(self):
        super(ConvAutoencoder, self).__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1),   # 16 -> 8
            nn.ReLU(True),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),  # 8 -> 4
            nn.ReLU(True),
        )
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1),  # 4 -> 8
            nn.ReLU(True),
            nn.ConvTranspose2d(8, 1, 3, stride=2, padding=1, output_padding=1),   # 8 -> 16
            nn.Sigmoid(),
        )

    def forward(self, x):
        x = self.encoder(x)
        x = self.decoder(x)
        return x


def train_autoencoder(epochs=20, noise_factor=0.3, batch_size=32):
    torch.manual_seed(0)
    images, _ = local_data.digits16(True, n=128)
    images = (torch.tensor(images) + 1) / 2  # [0, 1]
    model = ConvAutoencoder()
    criterion = nn.MSELoss()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    history = []
    for epoch in range(epochs):
        train_loss = 0.0
        for i in range(0, len(images), batch_size):
            img = images[i:i + batch_size]
            noisy_img = img + noise_factor * torch.randn_like(img)
            noisy_img = torch.clamp(noisy_img, 0., 1.)
            output = model(noisy_img)
            loss = criterion(output, img)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            train_loss += loss.item() * img.size(0)
        history.append(train_loss / len(images))
    return model, history


# -- milesial/Pytorch-UNet: unet_parts.py -----------------------------------------------------
class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()

        # if bilinear, use the normal convolutions to reduce the number of channels
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        # if you have padding issues, see
        # https://github.com/HaiyongJiang/U-Net-Pytorch-Unstructured-Buggy/commit/0e854509c2cea854e247a9c615f175f76fbb2e3a
        # https://github.com/xiaopeng-liao/Pytorch-UNet/commit/8ebac70e633bac59fc22bb5195e513d5832fb3bd
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


# -- unet_model.py (two levels instead of four, widths / 8) ----------------------------------
class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear

        self.inc = (DoubleConv(n_channels, 8))
        self.down1 = (Down(8, 16))
        factor = 2 if bilinear else 1
        self.down2 = (Down(16, 32 // factor))
        self.up1 = (Up(32, 16 // factor, bilinear))
        self.up2 = (Up(16, 8, bilinear))
        self.outc = (OutConv(8, n_classes))

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


# -- utils/dice_score.py ----------------------------------------------------------------------
def dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all batches, or for a single mask
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input: Tensor, target: Tensor, reduce_batch_first: bool = False, epsilon: float = 1e-6):
    # Average of Dice coefficient for all classes
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input: Tensor, target: Tensor, multiclass: bool = False):
    # Dice loss (objective to minimize) between 0 and 1
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


def segmentation_data(train, n):
    images, _ = local_data.digits16(train, n=n)
    x = torch.tensor(images[:, :, 1:, 1:])  # 15x15: odd sizes, so Up pads
    masks = (x[:, 0] > 0).long()
    return x, masks


def train_unet(epochs=6, bilinear=False, batch_size=16, learning_rate=1e-3,
               weight_decay=1e-8, momentum=0.999, gradient_clipping=1.0):
    torch.manual_seed(0)
    model = UNet(n_channels=1, n_classes=2, bilinear=bilinear)
    images, masks = segmentation_data(True, 64)
    val_images, val_masks = segmentation_data(False, 32)
    optimizer = optim.RMSprop(model.parameters(),
                              lr=learning_rate, weight_decay=weight_decay, momentum=momentum, foreach=True)
    scheduler = optim.lr_scheduler.ReduceLROnPlateau(optimizer, 'max', patience=5)  # goal: maximize Dice score
    criterion = nn.CrossEntropyLoss() if model.n_classes > 1 else nn.BCEWithLogitsLoss()
    history = []
    for epoch in range(1, epochs + 1):
        model.train()
        epoch_loss = 0
        for i in range(0, len(images), batch_size):
            images_b, true_masks = images[i:i + batch_size], masks[i:i + batch_size]
            masks_pred = model(images_b)
            loss = criterion(masks_pred, true_masks)
            loss += dice_loss(
                F.softmax(masks_pred, dim=1).float(),
                F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
                multiclass=True
            )
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), gradient_clipping)
            optimizer.step()
            epoch_loss += loss.item()
        # evaluate.py
        model.eval()
        with torch.no_grad():
            mask_pred = model(val_images)
            mask_true = F.one_hot(val_masks, model.n_classes).permute(0, 3, 1, 2).float()
            mask_pred = F.one_hot(mask_pred.argmax(dim=1), model.n_classes).permute(0, 3, 1, 2).float()
            # compute the Dice score, ignoring background
            val_score = multiclass_dice_coeff(mask_pred[:, 1:], mask_true[:, 1:], reduce_batch_first=False)
        scheduler.step(val_score)
        history.append((epoch_loss, val_score.item()))
    return model, history


def main():
    return {"autoencoder": train_autoencoder(), "unet": train_unet(),
            "unet_bilinear": train_unet(bilinear=True)}


if __name__ == "__main__":
    main()
