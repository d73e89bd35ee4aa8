# PyTorch's examples fast_neural_style (transformer_net.py: TransformerNet of ConvLayer with
# ReflectionPad2d, InstanceNorm2d(affine=True), ResidualBlock, UpsampleConvLayer with
# torch.nn.functional.interpolate(mode='nearest', scale_factor=2); utils.py: gram_matrix via
# bmm of the features and their transpose, normalize_batch with new_tensor and div_;
# neural_style.py's training loop: content loss on relu2_2, style loss on the gram matrices of
# every slice, Adam), written again for clgrad's tests. The pretrained VGG16 loss network is
# replaced by a small fixed random conv net with the same four named outputs, the COCO images
# by local 3x32x32 images in [0, 255], and the channel counts (32/64/128 in the example) scale
# with --width.
import argparse
import re
from collections import namedtuple

import torch
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

from local_data import cifar_like


class TransformerNet(torch.nn.Module):
    def __init__(self, width=32, n_residual=5):
        super(TransformerNet, self).__init__()
        c1, c2, c3 = width, 2 * width, 4 * width
        # Initial convolution layers
        self.conv1 = ConvLayer(3, c1, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(c1, affine=True)
        self.conv2 = ConvLayer(c1, c2, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(c2, affine=True)
        self.conv3 = ConvLayer(c2, c3, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(c3, affine=True)
        # Residual layers
        self.res = torch.nn.Sequential(*[ResidualBlock(c3) for _ in range(n_residual)])
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer(c3, c2, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(c2, affine=True)
        self.deconv2 = UpsampleConvLayer(c2, c1, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(c1, affine=True)
        self.deconv3 = ConvLayer(c1, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    """ResidualBlock
    introduced in: https://arxiv.org/abs/1512.03385
    recommended architecture: http://torch.ch/blog/2016/02/04/resnets.html
    """

    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    """UpsampleConvLayer
    Upsamples the input and then does a convolution. This method gives better results
    compared to ConvTranspose2d.
    ref: http://distill.pub/2016/deconv-checkerboard/
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = torch.nn.functional.interpolate(x_in, mode='nearest', scale_factor=self.upsample)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class LossNet(torch.nn.Module):
    """Stands in for vgg.Vgg16: four slices of conv + ReLU (+ max pooling), fixed weights,
    requires_grad=False, the same namedtuple of outputs."""

    def __init__(self, requires_grad=False, width=8):
        super(LossNet, self).__init__()
        self.slice1 = torch.nn.Sequential(torch.nn.Conv2d(3, width, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        self.slice2 = torch.nn.Sequential(torch.nn.MaxPool2d(kernel_size=2, stride=2),
                                          torch.nn.Conv2d(width, 2 * width, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        self.slice3 = torch.nn.Sequential(torch.nn.MaxPool2d(kernel_size=2, stride=2),
                                          torch.nn.Conv2d(2 * width, 4 * width, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        self.slice4 = torch.nn.Sequential(torch.nn.Conv2d(4 * width, 4 * width, 3, padding=1),
                                          torch.nn.ReLU(inplace=True))
        if not requires_grad:
            for param in self.parameters():
                param.requires_grad = False

    def forward(self, X):
        h = self.slice1(X)
        h_relu1_2 = h
        h = self.slice2(h)
        h_relu2_2 = h
        h = self.slice3(h)
        h_relu3_3 = h
        h = self.slice4(h)
        h_relu4_3 = h
        vgg_outputs = namedtuple("VggOutputs", ['relu1_2', 'relu2_2', 'relu3_3', 'relu4_3'])
        out = vgg_outputs(h_relu1_2, h_relu2_2, h_relu3_3, h_relu4_3)
        return out


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


def images(n):
    x, _ = cifar_like(train=True, n=n)
    return torch.from_numpy(x).add(1).mul(127.5)   # [-1, 1] -> [0, 255]


def loss_terms(transformer, vgg, x, gram_style, mse_loss, content_weight, style_weight):
    """The example's per-batch loss: (content_loss, style_loss)."""
    n_batch = len(x)
    y = transformer(x)

    y = normalize_batch(y)
    x = normalize_batch(x)

    features_y = vgg(y)
    features_x = vgg(x)

    content_loss = content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

    style_loss = 0.
    for ft_y, gm_s in zip(features_y, gram_style):
        gm_y = gram_matrix(ft_y)
        style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
    style_loss *= style_weight
    return content_loss, style_loss


def style_grams(vgg, style, batch_size):
    style = style.repeat(batch_size, 1, 1, 1)
    features_style = vgg(normalize_batch(style))
    return [gram_matrix(y) for y in features_style]


def train(args):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(args.seed)

    train_dataset = TensorDataset(images(args.train_size))
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet(args.width, args.n_residual).to(device)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = LossNet(requires_grad=False).to(device)
    style = images(args.train_size)[-1:].flip(3).to(device)   # one fixed style image
    gram_style = style_grams(vgg, style, args.batch_size)

    history = []
    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x,) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            x = x.to(device)
            content_loss, style_loss = loss_terms(transformer, vgg, x, gram_style, mse_loss,
                                                  args.content_weight, args.style_weight)
            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()
            history.append(total_loss.item())

            if (batch_id + 1) % args.log_interval == 0:
                mesg = "Epoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    e + 1, count, len(train_dataset),
                    agg_content_loss / (batch_id + 1),
                    agg_style_loss / (batch_id + 1),
                    (agg_content_loss + agg_style_loss) / (batch_id + 1)
                )
                print(mesg)
    return transformer, history


def stylize(model_path, content_image, width, n_residual):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    content_image = content_image.to(device)
    with torch.no_grad():
        style_model = TransformerNet(width, n_residual)
        state_dict = torch.load(model_path)
        # remove saved deprecated running_* keys in InstanceNorm from the checkpoint
        for k in list(state_dict.keys()):
            if re.search(r'in\d+\.running_(mean|var)$', k):
                del state_dict[k]
        style_model.load_state_dict(state_dict)
        style_model.to(device)
        style_model.eval()
        output = style_model(content_image).cpu()
    return output[0].clone().clamp(0, 255).numpy()


def main(argv=None):
    parser = argparse.ArgumentParser(description="parser for fast-neural-style")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--train-size", type=int, default=16)
    parser.add_argument("--width", type=int, default=32)
    parser.add_argument("--n-residual", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--content-weight", type=float, default=1e5)
    parser.add_argument("--style-weight", type=float, default=1e10)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--log-interval", type=int, default=1)
    args = parser.parse_args(argv)
    transformer, history = train(args)
    # save model
    transformer.eval().cpu()
    save_model_path = "epoch_" + str(args.epochs) + "_style.model"
    torch.save(transformer.state_dict(), save_model_path)
    print("\nDone, trained model saved at", save_model_path)
    image = stylize(save_model_path, images(1), args.width, args.n_residual)
    return transformer, history, image


if __name__ == '__main__':
    main()
