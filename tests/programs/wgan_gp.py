# WGAN-GP (Gulrajani et al. 2017, "Improved Training of Wasserstein GANs") as the popular
# PyTorch-GAN implementations write it: compute_gradient_penalty with autograd.grad(...,
# create_graph=True, retain_graph=True, only_inputs=True) on random interpolates, the
# penalty ((||grad||_2 - 1)^2).mean() added to the critic's loss, n_critic critic steps per
# generator step, Adam(lr, betas=(0.5, 0.999)). A conv critic (Conv2d + LeakyReLU + Linear,
# no batch norm, as the paper asks) and an MLP generator on 8x8 synthetic blobs.
import torch
import torch.autograd as autograd
import torch.nn as nn

latent_dim = 8
img_size = 8
lambda_gp = 10
n_critic = 5
lr = 0.0002
b1, b2 = 0.5, 0.999


def blobs(n):
    """8x8 images of one Gaussian bump each, at positions that cycle through the grid."""
    g = torch.arange(img_size, dtype=torch.float32)
    k = torch.arange(n)
    cy = (k % 5).float() + 1.5
    cx = ((k // 5) % 5).float() + 1.5
    d2 = (g.view(1, -1, 1) - cy.view(-1, 1, 1)) ** 2 + (g.view(1, 1, -1) - cx.view(-1, 1, 1)) ** 2
    return (torch.exp(-d2 / 2.0) * 2 - 1).unsqueeze(1)


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.model = nn.Sequential(
            nn.Linear(latent_dim, 64),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Linear(64, img_size * img_size),
            nn.Tanh(),
        )

    def forward(self, z):
        img = self.model(z)
        return img.view(img.shape[0], 1, img_size, img_size)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.model = nn.Sequential(
            nn.Conv2d(1, 8, 3, 2, 1),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(8, 16, 3, 2, 1),
            nn.LeakyReLU(0.2, inplace=True),
        )
        self.adv_layer = nn.Linear(16 * 2 * 2, 1)

    def forward(self, img):
        out = self.model(img)
        out = out.view(out.shape[0], -1)
        return self.adv_layer(out)


def compute_gradient_penalty(D, real_samples, fake_samples, alpha):
    """Calculates the gradient penalty loss for WGAN GP"""
    # Get random interpolation between real and fake samples
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(real_samples.shape[0], 1, requires_grad=False)
    # Get gradient w.r.t. interpolates
    gradients = autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    return gradient_penalty


def critic_step(generator, discriminator, optimizer_D, real_imgs, z, alpha):
    optimizer_D.zero_grad()
    fake_imgs = generator(z)
    real_validity = discriminator(real_imgs)
    fake_validity = discriminator(fake_imgs.detach())
    gradient_penalty = compute_gradient_penalty(discriminator, real_imgs.data,
                                                fake_imgs.data, alpha)
    d_loss = -torch.mean(real_validity) + torch.mean(fake_validity) + lambda_gp * gradient_penalty
    d_loss.backward()
    optimizer_D.step()
    return d_loss.item(), gradient_penalty.item()


def generator_step(generator, discriminator, optimizer_G, z):
    optimizer_G.zero_grad()
    fake_imgs = generator(z)
    g_loss = -torch.mean(discriminator(fake_imgs))
    g_loss.backward()
    optimizer_G.step()
    return g_loss.item()


def main(n_epochs=2, batch_size=16, n=64):
    torch.manual_seed(0)
    dataloader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(blobs(n)),
                                             batch_size=batch_size, shuffle=True)
    generator = Generator()
    discriminator = Discriminator()
    optimizer_G = torch.optim.Adam(generator.parameters(), lr=lr, betas=(b1, b2))
    optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=lr, betas=(b1, b2))
    history = []
    batches_done = 0
    for epoch in range(n_epochs):
        for i, (imgs,) in enumerate(dataloader):
            z = torch.randn(imgs.shape[0], latent_dim)
            alpha = torch.rand(imgs.size(0), 1, 1, 1)
            d_loss, gp = critic_step(generator, discriminator, optimizer_D, imgs, z, alpha)
            g_loss = None
            if i % n_critic == 0:
                g_loss = generator_step(generator, discriminator, optimizer_G, z)
                print("[Epoch %d/%d] [Batch %d/%d] [D loss: %f] [G loss: %f] [GP: %f]"
                      % (epoch, n_epochs, i, len(dataloader), d_loss, g_loss, gp))
            history.append((d_loss, gp, g_loss))
            batches_done += 1
    return history, generator, discriminator
