"""The zoo's models, written once against PyTorch's API: ``build(name, torch)`` takes the
framework module (``import clgrad as torch`` or the real ``torch``), so the same code builds
both, with the same parameter names and layer layout (so PyTorch's ``state_dict`` loads into
clgrad's model as it is).

The models follow the CIFAR forms commonly trained on 3x32x32 (10 classes), written again here:

- resnet18: ResNet-18, BasicBlock [2,2,2,2], 3x3 stem, no max-pool.
- resnext29: ResNeXt-29 32x4d, bottleneck 1x1 -> 3x3 groups=32 -> 1x1, blocks [3,3,3].
- densenet: DenseNet-BC with DenseNet-121's blocks [6,12,24,16], growth rate 12 (not 32: the
  same depth and concatenations, fewer FLOPs), reduction 0.5.
- mobilenetv2: MobileNetV2, inverted residuals (1x1, depthwise 3x3, 1x1), ReLU6.
- efficientnet_b0: EfficientNet-B0, MBConv with SiLU and squeeze-excitation (0.25), kernels
  3 and 5; no drop-connect (stochastic depth).
- shufflenetv2: ShuffleNetV2 1.0x, channel split (chunk) and shuffle through view/transpose.
- vgg11: VGG-11 with BatchNorm, plain 3x3 stacks.
- alexnet: Caffe's AlexNet on 3x227x227, 1000 classes: grouped conv2/4/5 (groups=2), LRN.

Dropout (EfficientNet-B0's head, AlexNet's fc6/fc7) draws different masks in each framework,
so the benchmark compares the first losses with the Dropout modules in eval mode.
"""

CIFAR_MODELS = ["resnet18", "resnext29", "densenet", "mobilenetv2", "efficientnet_b0",
                "shufflenetv2", "vgg11"]
MODELS = CIFAR_MODELS + ["alexnet"]


def input_shape(name):
    """(C, H, W) of one image and the number of classes."""
    return ((3, 227, 227), 1000) if name == "alexnet" else ((3, 32, 32), 10)


def build(name, torch):
    """Model ``name`` built with framework ``torch`` (clgrad or PyTorch)."""
    return _BUILDERS[name](torch)


def conv_shapes(name, torch, key) -> dict:
    """{key(conv, input): count} over every Conv2d that one forward of model ``name`` (built
    with PyTorch, ``torch``) runs on one zero image (forward hooks); convs whose key is None
    are left out."""
    m, seen = build(name, torch), {}

    def hook(mod, inp, _out):
        k = key(mod, inp[0])
        if k is not None:
            seen[k] = seen.get(k, 0) + 1
    for mod in m.modules():
        if isinstance(mod, torch.nn.Conv2d):
            mod.register_forward_hook(hook)
    with torch.no_grad():
        m(torch.zeros(1, *input_shape(name)[0]))
    return seen


def _conv_bn(nn, cin, cout, k, stride=1, groups=1):
    return [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            nn.BatchNorm2d(cout)]


def _resnet18(torch):
    nn = torch.nn
    F = nn.functional

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(*_conv_bn(nn, cin, cout, 1, stride))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return F.relu(y + self.shortcut(x))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            stages, cin = [], 64
            for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
                stages.append(nn.Sequential(Basic(cin, cout, stride), Basic(cout, cout, 1)))
                cin = cout
            self.layer1, self.layer2, self.layer3, self.layer4 = stages
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(torch.flatten(self.pool(x), 1))

    return ResNet18()


def _resnext29(torch, cardinality=32, width=4, blocks=(3, 3, 3)):
    nn = torch.nn
    F = nn.functional

    class Bottleneck(nn.Module):
        def __init__(self, cin, gw, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, gw, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(gw)
            self.conv2 = nn.Conv2d(gw, gw, 3, stride, 1, groups=cardinality, bias=False)
            self.bn2 = nn.BatchNorm2d(gw)
            self.conv3 = nn.Conv2d(gw, 2 * gw, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(2 * gw)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != 2 * gw:
                self.shortcut = nn.Sequential(*_conv_bn(nn, cin, 2 * gw, 1, stride))

        def forward(self, x):
            y = F.relu(self.bn1(self.conv1(x)))
            y = F.relu(self.bn2(self.conv2(y)))
            y = self.bn3(self.conv3(y))
            return F.relu(y + self.shortcut(x))

    class ResNeXt(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            cin, gw, stages = 64, cardinality * width, []
            for i, n in enumerate(blocks):
                layers = []
                for j in range(n):
                    layers.append(Bottleneck(cin, gw, 2 if (i > 0 and j == 0) else 1))
                    cin = 2 * gw
                stages.append(nn.Sequential(*layers))
                gw *= 2
            self.layer1, self.layer2, self.layer3 = stages
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            return self.fc(torch.flatten(self.pool(x), 1))

    return ResNeXt()


def _densenet(torch, blocks=(6, 12, 24, 16), growth=12, reduction=0.5):
    nn = torch.nn
    F = nn.functional

    class DenseLayer(nn.Module):
        def __init__(self, cin):
            super().__init__()
            self.bn1 = nn.BatchNorm2d(cin)
            self.conv1 = nn.Conv2d(cin, 4 * growth, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(4 * growth)
            self.conv2 = nn.Conv2d(4 * growth, growth, 3, 1, 1, bias=False)

        def forward(self, x):
            y = self.conv1(F.relu(self.bn1(x)))
            y = self.conv2(F.relu(self.bn2(y)))
            return torch.cat([y, x], 1)

    class Transition(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.bn = nn.BatchNorm2d(cin)
            self.conv = nn.Conv2d(cin, cout, 1, bias=False)

        def forward(self, x):
            return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)

    class DenseNet(nn.Module):
        def __init__(self):
            super().__init__()
            c = 2 * growth
            self.conv1 = nn.Conv2d(3, c, 3, 1, 1, bias=False)
            parts = []
            for i, n in enumerate(blocks):
                layers = []
                for _ in range(n):
                    layers.append(DenseLayer(c))
                    c += growth
                parts.append(nn.Sequential(*layers))
                if i < len(blocks) - 1:
                    out = int(c * reduction)
                    parts.append(Transition(c, out))
                    c = out
            self.features = nn.Sequential(*parts)
            self.bn = nn.BatchNorm2d(c)
            self.fc = nn.Linear(c, 10)

        def forward(self, x):
            x = F.relu(self.bn(self.features(self.conv1(x))))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return DenseNet()


def _mobilenetv2(torch):
    nn = torch.nn

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, expansion, stride):
            super().__init__()
            hidden = cin * expansion
            layers = []
            if expansion != 1:
                layers += _conv_bn(nn, cin, hidden, 1) + [nn.ReLU6(inplace=True)]
            layers += _conv_bn(nn, hidden, hidden, 3, stride, groups=hidden)
            layers += [nn.ReLU6(inplace=True)] + _conv_bn(nn, hidden, cout, 1)
            self.conv = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.conv(x) if self.residual else self.conv(x)

    class MobileNetV2(nn.Module):
        # (expansion, out channels, blocks, stride); CIFAR form: the first stride-2 steps
        # of the ImageNet form are stride 1 here
        cfg = [(1, 16, 1, 1), (6, 24, 2, 1), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
               (6, 160, 3, 2), (6, 320, 1, 1)]

        def __init__(self):
            super().__init__()
            layers = _conv_bn(nn, 3, 32, 3) + [nn.ReLU6(inplace=True)]
            cin = 32
            for t, c, n, s in self.cfg:
                for i in range(n):
                    layers.append(InvertedResidual(cin, c, t, s if i == 0 else 1))
                    cin = c
            layers += _conv_bn(nn, cin, 1280, 1) + [nn.ReLU6(inplace=True)]
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Linear(1280, 10)

        def forward(self, x):
            return self.classifier(torch.flatten(self.pool(self.features(x)), 1))

    return MobileNetV2()


def _efficientnet_b0(torch):
    nn = torch.nn

    class SqueezeExcite(nn.Module):
        def __init__(self, c, squeezed):
            super().__init__()
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(c, squeezed, 1)
            self.act = nn.SiLU()
            self.fc2 = nn.Conv2d(squeezed, c, 1)
            self.gate = nn.Sigmoid()

        def forward(self, x):
            return x * self.gate(self.fc2(self.act(self.fc1(self.pool(x)))))

    class MBConv(nn.Module):
        def __init__(self, cin, cout, expansion, k, stride):
            super().__init__()
            hidden = cin * expansion
            layers = []
            if expansion != 1:
                layers += _conv_bn(nn, cin, hidden, 1) + [nn.SiLU()]
            layers += _conv_bn(nn, hidden, hidden, k, stride, groups=hidden) + [nn.SiLU()]
            layers += [SqueezeExcite(hidden, max(1, cin // 4))]
            layers += _conv_bn(nn, hidden, cout, 1)
            self.block = nn.Sequential(*layers)
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            return x + self.block(x) if self.residual else self.block(x)

    class EfficientNetB0(nn.Module):
        # (expansion, out channels, blocks, kernel, stride); CIFAR form (stem stride 1,
        # second stage stride 1)
        cfg = [(1, 16, 1, 3, 1), (6, 24, 2, 3, 1), (6, 40, 2, 5, 2), (6, 80, 3, 3, 2),
               (6, 112, 3, 5, 1), (6, 192, 4, 5, 2), (6, 320, 1, 3, 1)]

        def __init__(self):
            super().__init__()
            layers = _conv_bn(nn, 3, 32, 3) + [nn.SiLU()]
            cin = 32
            for t, c, n, k, s in self.cfg:
                for i in range(n):
                    layers.append(MBConv(cin, c, t, k, s if i == 0 else 1))
                    cin = c
            layers += _conv_bn(nn, cin, 1280, 1) + [nn.SiLU()]
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.dropout = nn.Dropout(0.2)
            self.classifier = nn.Linear(1280, 10)

        def forward(self, x):
            x = torch.flatten(self.pool(self.features(x)), 1)
            return self.classifier(self.dropout(x))

    return EfficientNetB0()


def _shufflenetv2(torch):
    nn = torch.nn
    F = nn.functional

    def shuffle(x, groups=2):
        n, c, h, w = x.shape
        return x.view(n, groups, c // groups, h, w).transpose(1, 2).reshape(n, c, h, w)

    class Unit(nn.Module):
        """stride 1: half the channels pass, the other half goes through 1x1-dw3x3-1x1."""

        def __init__(self, c):
            super().__init__()
            h = c // 2
            self.branch = nn.Sequential(*_conv_bn(nn, h, h, 1), nn.ReLU(inplace=True),
                                        *_conv_bn(nn, h, h, 3, groups=h),
                                        *_conv_bn(nn, h, h, 1), nn.ReLU(inplace=True))

        def forward(self, x):
            a, b = x.chunk(2, dim=1)
            return shuffle(torch.cat([a, self.branch(b)], 1))

    class DownUnit(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            h = cout // 2
            self.left = nn.Sequential(*_conv_bn(nn, cin, cin, 3, 2, groups=cin),
                                      *_conv_bn(nn, cin, h, 1), nn.ReLU(inplace=True))
            self.right = nn.Sequential(*_conv_bn(nn, cin, h, 1), nn.ReLU(inplace=True),
                                       *_conv_bn(nn, h, h, 3, 2, groups=h),
                                       *_conv_bn(nn, h, h, 1), nn.ReLU(inplace=True))

        def forward(self, x):
            return shuffle(torch.cat([self.left(x), self.right(x)], 1))

    class ShuffleNetV2(nn.Module):
        def __init__(self, widths=(116, 232, 464), blocks=(3, 7, 3)):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 24, 3, 1, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(24)
            cin, stages = 24, []
            for c, n in zip(widths, blocks):
                stages.append(nn.Sequential(DownUnit(cin, c), *[Unit(c) for _ in range(n)]))
                cin = c
            self.layer1, self.layer2, self.layer3 = stages
            self.conv2 = nn.Conv2d(cin, 1024, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(1024)
            self.fc = nn.Linear(1024, 10)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.layer3(self.layer2(self.layer1(x)))
            x = F.relu(self.bn2(self.conv2(x)))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return ShuffleNetV2()


def _vgg11(torch):
    nn = torch.nn
    cfg = [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"]

    class VGG11(nn.Module):
        def __init__(self):
            super().__init__()
            layers, cin = [], 3
            for v in cfg:
                if v == "M":
                    layers.append(nn.MaxPool2d(2, 2))
                else:
                    layers += [nn.Conv2d(cin, v, 3, padding=1), nn.BatchNorm2d(v),
                               nn.ReLU(inplace=True)]
                    cin = v
            self.features = nn.Sequential(*layers)
            self.classifier = nn.Linear(512, 10)

        def forward(self, x):
            return self.classifier(torch.flatten(self.features(x), 1))

    return VGG11()


def _alexnet(torch):
    nn = torch.nn

    class AlexNet(nn.Module):
        """Caffe's bvlc_alexnet: LRN after conv1/conv2, conv2/4/5 in two groups."""

        def __init__(self, classes=1000):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, 11, 4), nn.ReLU(inplace=True),
                nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0), nn.MaxPool2d(3, 2),
                nn.Conv2d(96, 256, 5, padding=2, groups=2), nn.ReLU(inplace=True),
                nn.LocalResponseNorm(5, 1e-4, 0.75, 1.0), nn.MaxPool2d(3, 2),
                nn.Conv2d(256, 384, 3, padding=1), nn.ReLU(inplace=True),
                nn.Conv2d(384, 384, 3, padding=1, groups=2), nn.ReLU(inplace=True),
                nn.Conv2d(384, 256, 3, padding=1, groups=2), nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2))
            self.classifier = nn.Sequential(
                nn.Linear(256 * 6 * 6, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
                nn.Linear(4096, classes))

        def forward(self, x):
            return self.classifier(torch.flatten(self.features(x), 1))

    return AlexNet()


_BUILDERS = {"resnet18": _resnet18, "resnext29": _resnext29, "densenet": _densenet,
             "mobilenetv2": _mobilenetv2, "efficientnet_b0": _efficientnet_b0,
             "shufflenetv2": _shufflenetv2, "vgg11": _vgg11, "alexnet": _alexnet}
