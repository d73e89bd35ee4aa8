# The DCGAN tutorial's training loop (PyTorch tutorials, "DCGAN Tutorial") on a tiny 16x16
# problem: weights_init with classname.find('Conv'), a generator of ConvTranspose2d +
# BatchNorm2d + ReLU + Tanh, a discriminator of Conv2d + LeakyReLU(0.2, inplace=True) +
# BatchNorm2d + Sigmoid, nn.BCELoss, labels by torch.full, two Adam optimizers with
# betas=(beta1, 0.999), fake.detach() for D's step, fixed_noise for progress images.
# The CelebA ImageFolder is replaced by synthetic rings.
import torch
import torch.nn as nn
import torch.optim as optim

nc = 1
nz = 8
ngf = 8
ndf = 8
lr = 0.0002
beta1 = 0.5


def rings(n):
    g = torch.linspace(-1, 1, 16)
    r = torch.sqrt(g.view(16, 1) ** 2 + g.view(1, 16) ** 2)
    radius = 0.3 + 0.5 * (torch.arange(n, dtype=torch.float32) % 5) / 5
    img = torch.exp(-(r.unsqueeze(0) - radius.view(-1, 1, 1)) ** 2 / 0.02) * 2 - 1
    return img.unsqueeze(1)


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngpu=0):
        super(Generator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ngpu=0):
        super(Discriminator, self).__init__()
        self.ngpu = ngpu
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        return self.main(input)


def train_step(netG, netD, optimizerG, optimizerD, criterion, real_cpu, noise, device):
    real_label = 1.
    fake_label = 0.
    ############################
    # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    ###########################
    netD.zero_grad()
    b_size = real_cpu.size(0)
    label = torch.full((b_size,), real_label, dtype=torch.float, device=device)
    output = netD(real_cpu).view(-1)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach()).view(-1)
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    ############################
    # (2) Update G network: maximize log(D(G(z)))
    ###########################
    netG.zero_grad()
    label.fill_(real_label)  # fake labels are real for generator cost
    output = netD(fake).view(-1)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    return errD.item(), errG.item(), D_x, D_G_z1, D_G_z2


def main(num_epochs=2, batch_size=16):
    torch.manual_seed(999)
    device = torch.device("cuda:0" if (torch.cuda.is_available()) else "cpu")
    dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(rings(64)),
                                             batch_size=batch_size, shuffle=True)
    netG = Generator().to(device)
    netG.apply(weights_init)
    print(netG)
    netD = Discriminator().to(device)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(16, nz, 1, 1, device=device)
    optimizerD = optim.Adam(netD.parameters(), lr=lr, betas=(beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=lr, betas=(beta1, 0.999))
    img_list, G_losses, D_losses = [], [], []
    for epoch in range(num_epochs):
        for i, data in enumerate(dataloader, 0):
            real_cpu = data[0].to(device)
            noise = torch.randn(real_cpu.size(0), nz, 1, 1, device=device)
            errD, errG, D_x, D_G_z1, D_G_z2 = train_step(
                netG, netD, optimizerG, optimizerD, criterion, real_cpu, noise, device)
            if i % 2 == 0:
                print('[%d/%d][%d/%d]\tLoss_D: %.4f\tLoss_G: %.4f\tD(x): %.4f\tD(G(z)): %.4f / %.4f'
                      % (epoch, num_epochs, i, len(dataloader), errD, errG, D_x, D_G_z1, D_G_z2))
            G_losses.append(errG)
            D_losses.append(errD)
        with torch.no_grad():
            fake = netG(fixed_noise).detach().cpu()
        img_list.append(fake)
    return G_losses, D_losses, img_list


if __name__ == '__main__':
    main()
