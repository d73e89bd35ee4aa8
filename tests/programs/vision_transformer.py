# PyTorch's examples vision_transformer/main.py (ViT from scratch, Dosovitskiy et al. 2020):
# PatchExtractor by input.unfold(2, p, p).unfold(3, p, p).permute(...).contiguous().view,
# InputEmbedding with a Linear projection, a class token and a positional embedding made as
# nn.Parameter(torch.randn(batch_size, 1, latent_size)).to(self.device), torch.cat of the
# class token and `linear_projection += pos_embed`, EncoderBlock (one LayerNorm used twice,
# nn.MultiheadAttention fed (batch, seq, dim) without batch_first, GELU MLP, residuals),
# ViT with an nn.ModuleList of encoders and an MLPHead on enc_output[:, 0], and TrainEval's
# train_fn/eval_fn loops with tqdm replaced by plain loops. Data: CIFAR-10 replaced by
# local_data's 16x16 digits repeated over 3 channels and argparse defaults made small
# (--train-size/--test-size added); drop_last=True
# because the class token's batch dimension is the batch size, as the example's.
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

import local_data


class PatchExtractor(nn.Module):
    def __init__(self, patch_size=16):
        super().__init__()
        self.patch_size = patch_size

    def forward(self, input_data):
        batch_size, channels, height, width = input_data.size()
        assert height % self.patch_size == 0 and width % self.patch_size == 0, \
            f"Input height ({height}) and width ({width}) must be divisible by patch size ({self.patch_size})"

        num_patches_h = height // self.patch_size
        num_patches_w = width // self.patch_size
        num_patches = num_patches_h * num_patches_w

        patches = input_data.unfold(2, self.patch_size, self.patch_size). \
            unfold(3, self.patch_size, self.patch_size). \
            permute(0, 2, 3, 1, 4, 5). \
            contiguous(). \
            view(batch_size, num_patches, -1)

        # Expected shape of a patch on default settings is (4, 196, 768)

        return patches


class InputEmbedding(nn.Module):

    def __init__(self, args):
        super(InputEmbedding, self).__init__()
        self.patch_size = args.patch_size
        self.n_channels = args.n_channels
        self.latent_size = args.latent_size
        use_cuda = not args.no_cuda and torch.cuda.is_available()
        self.device = torch.device("cuda" if use_cuda else "cpu")
        self.batch_size = args.batch_size
        self.input_size = self.patch_size * self.patch_size * self.n_channels

        # Linear projection
        self.LinearProjection = nn.Linear(self.input_size, self.latent_size)
        # Class token
        self.class_token = nn.Parameter(torch.randn(self.batch_size, 1, self.latent_size)).to(self.device)
        # Positional embedding
        self.pos_embedding = nn.Parameter(torch.randn(self.batch_size, 1, self.latent_size)).to(self.device)

    def forward(self, input_data):
        input_data = input_data.to(self.device)
        # Patchifying the Image
        patchify = PatchExtractor(patch_size=self.patch_size)
        patches = patchify(input_data)

        linear_projection = self.LinearProjection(patches).to(self.device)
        b, n, _ = linear_projection.shape
        linear_projection = torch.cat((self.class_token, linear_projection), dim=1)
        pos_embed = self.pos_embedding[:, :n + 1, :]
        linear_projection += pos_embed

        return linear_projection


class EncoderBlock(nn.Module):

    def __init__(self, args):
        super(EncoderBlock, self).__init__()

        self.latent_size = args.latent_size
        self.num_heads = args.num_heads
        self.dropout = args.dropout
        self.norm = nn.LayerNorm(self.latent_size)
        self.attention = nn.MultiheadAttention(self.latent_size, self.num_heads, dropout=self.dropout)
        self.enc_MLP = nn.Sequential(
            nn.Linear(self.latent_size, self.latent_size * 4),
            nn.GELU(),
            nn.Dropout(self.dropout),
            nn.Linear(self.latent_size * 4, self.latent_size),
            nn.Dropout(self.dropout)
        )

    def forward(self, emb_patches):
        first_norm = self.norm(emb_patches)
        attention_out = self.attention(first_norm, first_norm, first_norm)[0]
        first_added = attention_out + emb_patches
        second_norm = self.norm(first_added)
        mlp_out = self.enc_MLP(second_norm)
        output = mlp_out + first_added

        return output


class ViT(nn.Module):
    def __init__(self, args):
        super(ViT, self).__init__()

        self.num_encoders = args.num_encoders
        self.latent_size = args.latent_size
        self.num_classes = args.num_classes
        self.dropout = args.dropout

        self.embedding = InputEmbedding(args)
        # Encoder Stack
        self.encoders = nn.ModuleList([EncoderBlock(args) for _ in range(self.num_encoders)])
        self.MLPHead = nn.Sequential(
            nn.LayerNorm(self.latent_size),
            nn.Linear(self.latent_size, self.latent_size),
            nn.Linear(self.latent_size, self.num_classes),
        )

    def forward(self, test_input):
        enc_output = self.embedding(test_input)
        for enc_layer in self.encoders:
            enc_output = enc_layer(enc_output)

        class_token_embed = enc_output[:, 0]
        return self.MLPHead(class_token_embed)


class TrainEval:

    def __init__(self, args, model, train_dataloader, val_dataloader, optimizer, criterion, device):
        self.model = model
        self.train_dataloader = train_dataloader
        self.val_dataloader = val_dataloader
        self.optimizer = optimizer
        self.criterion = criterion
        self.epoch = args.epochs
        self.device = device
        self.args = args

    def train_fn(self, current_epoch):
        self.model.train()
        total_loss = 0.0
        for t, data in enumerate(self.train_dataloader):
            images, labels = data
            images, labels = images.to(self.device), labels.to(self.device)
            self.optimizer.zero_grad()
            logits = self.model(images)
            loss = self.criterion(logits, labels)
            loss.backward()
            self.optimizer.step()

            total_loss += loss.item()
            if self.args.dry_run:
                break

        return total_loss / len(self.train_dataloader)

    def eval_fn(self, current_epoch):
        self.model.eval()
        total_loss = 0.0
        correct = 0
        with torch.no_grad():
            for t, data in enumerate(self.val_dataloader):
                images, labels = data
                images, labels = images.to(self.device), labels.to(self.device)

                logits = self.model(images)
                loss = self.criterion(logits, labels)

                total_loss += loss.item()
                correct += (logits.argmax(1) == labels).sum().item()
                if self.args.dry_run:
                    break

        return total_loss / len(self.val_dataloader), correct / (len(self.val_dataloader) * self.args.batch_size)

    def train(self):
        best_valid_loss = float("inf")
        history = []
        for i in range(self.epoch):
            train_loss = self.train_fn(i)
            val_loss, val_acc = self.eval_fn(i)

            if val_loss < best_valid_loss:
                best_valid_loss = val_loss
            print(f"Epoch {i + 1} train loss {train_loss:.4f} val loss {val_loss:.4f} val acc {val_acc:.3f}")
            history.append((train_loss, val_loss, val_acc))
        return history


def main(argv=None):
    parser = argparse.ArgumentParser(description='Vision Transformer in PyTorch')
    parser.add_argument('--no-cuda', action='store_true', default=False,
                        help='disables CUDA training')
    parser.add_argument('--patch-size', type=int, default=4,
                        help='patch size for images (default : 16)')
    parser.add_argument('--latent-size', type=int, default=32,
                        help='latent size (default : 768)')
    parser.add_argument('--n-channels', type=int, default=3,
                        help='number of channels in images (default : 3 for RGB)')
    parser.add_argument('--num-heads', type=int, default=4,
                        help='(default : 12)')
    parser.add_argument('--num-encoders', type=int, default=2,
                        help='number of encoders (default : 12)')
    parser.add_argument('--dropout', type=int, default=0.1,
                        help='dropout value (default : 0.1)')
    parser.add_argument('--img-size', type=int, default=16,
                        help='image size to be reshaped to (default : 224')
    parser.add_argument('--num-classes', type=int, default=10,
                        help='number of classes in dataset (default : 10 for CIFAR10)')
    parser.add_argument('--epochs', type=int, default=6,
                        help='number of epochs (default : 10)')
    parser.add_argument('--lr', type=float, default=1e-3,
                        help='base learning rate (default : 0.01)')
    parser.add_argument('--weight-decay', type=int, default=3e-2,
                        help='weight decay value (default : 0.03)')
    parser.add_argument('--batch-size', type=int, default=16,
                        help='batch size (default : 4)')
    parser.add_argument('--dry-run', action='store_true', default=False,
                        help='quickly check a single pass')
    parser.add_argument('--train-size', type=int, default=256)
    parser.add_argument('--test-size', type=int, default=96)
    args = parser.parse_args(argv)

    use_cuda = not args.no_cuda and torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")

    x, y = local_data.digits16(True, n=args.train_size)
    vx, vy = local_data.digits16(False, n=args.test_size)
    x, vx = x.repeat(args.n_channels, 1), vx.repeat(args.n_channels, 1)  # RGB-shaped
    train_loader = DataLoader(TensorDataset(torch.tensor(x), torch.tensor(y)),
                              batch_size=args.batch_size, shuffle=True, drop_last=True)
    valid_loader = DataLoader(TensorDataset(torch.tensor(vx), torch.tensor(vy)),
                              batch_size=args.batch_size, shuffle=False, drop_last=True)

    model = ViT(args).to(device)

    optimizer = optim.Adam(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    criterion = nn.CrossEntropyLoss()

    history = TrainEval(args, model, train_loader, valid_loader, optimizer, criterion, device).train()
    return model, history


if __name__ == "__main__":
    main()
