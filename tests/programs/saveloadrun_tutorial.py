# PyTorch's "Learn the Basics" tutorial "Save and Load the Model" (saveloadrun_tutorial.py):
# saving learned parameters with torch.save(model.state_dict(), 'model_weights.pth'),
# loading them into a fresh model with load_state_dict(torch.load(..., weights_only=True)) and
# model.eval(), then saving the whole model with torch.save(model, 'model.pth') and loading it
# with torch.load('model.pth', weights_only=False). torchvision's vgg16 (a download) is
# replaced by a small VGG-style network written out here, as models.vgg16 builds it
# (features, avgpool, classifier).
import torch
import torch.nn as nn


class VGG(nn.Module):
    """A small VGG: conv3x3-ReLU blocks with max pooling, AdaptiveAvgPool2d, an MLP head."""

    def __init__(self, cfg=(8, "M", 16, "M"), num_classes=10, dropout=0.5):
        super().__init__()
        layers, in_channels = [], 3
        for v in cfg:
            if v == "M":
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1),
                           nn.ReLU(inplace=True)]
                in_channels = v
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(in_channels * 2 * 2, 32),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(32, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def vgg(weights=None):
    """models.vgg16(weights=...): a fresh model, or one with the given state_dict."""
    model = VGG()
    if weights is not None:
        model.load_state_dict(weights)
    return model


def main():
    torch.manual_seed(0)
    #######################################################################
    # Saving and Loading Model Weights
    # --------------------------------
    # PyTorch models store the learned parameters in an internal
    # state dictionary, called ``state_dict``. These can be persisted via the ``torch.save``
    # method:

    model = vgg(weights=vgg().state_dict())
    torch.save(model.state_dict(), 'model_weights.pth')

    ##########################
    # To load model weights, you need to create an instance of the same model first, and
    # then load the parameters using ``load_state_dict()`` method.
    #
    # In the code below, we set ``weights_only=True`` to limit the functions executed during
    # unpickling to only those necessary for loading weights. Using ``weights_only=True`` is
    # considered a best practice when loading weights.

    model = vgg()  # we do not specify ``weights``, i.e. create untrained model
    model.load_state_dict(torch.load('model_weights.pth', weights_only=True))
    model.eval()

    ###########################
    # .. note:: be sure to call ``model.eval()`` method before inferencing to set the dropout
    #    and batch normalization layers to evaluation mode. Failing to do this will yield
    #    inconsistent inference results.

    #######################################################################
    # Saving and Loading Models with Shapes
    # -------------------------------------
    # When loading model weights, we needed to instantiate the model class first, because the
    # class defines the structure of a network. We might want to save the structure of this
    # class together with the model, in which case we can pass ``model`` (and not
    # ``model.state_dict()``) to the saving function:

    torch.save(model, 'model.pth')

    ########################
    # We can then load the model as demonstrated below.
    #
    # As described in `Saving and loading torch.nn.Modules <pytorch.org/docs/main/notes/
    # serialization.html#saving-and-loading-torch-nn-modules>`_, saving ``state_dict``s is
    # considered the best practice. However, below we use ``weights_only=False`` because this
    # involves loading the model, which is a legacy use case for ``torch.save``.

    model = torch.load('model.pth', weights_only=False)
    return model


if __name__ == "__main__":
    main()
