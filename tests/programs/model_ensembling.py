# PyTorch's tutorial "Model ensembling" (torch.func): ten SimpleMLPs run on different
# minibatches and on the same minibatch, first with a Python loop, then vectorized with
# stack_module_state, functional_call on a "stateless" copy of one model moved to the 'meta'
# device, and vmap (in_dims=(0, 0, None) for the shared minibatch); the results compared,
# and the loop timed against vmap with torch.utils.benchmark's Timer. The tutorial's
# module-level code in functions (the sizes parameters) so a test can run it small; its
# imports, spread over the tutorial, at the top.
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import vmap
from torch.func import functional_call, stack_module_state
from torch.utils.benchmark import Timer
torch.manual_seed(0)


# Here's a simple MLP
class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


def main(device='cpu', num_models=10, batches=100, batch_size=64, time_it=False):
    ######################################################################
    # Let's generate a batch of dummy data and pretend that we're working with
    # an MNIST dataset. Thus, the dummy images are 28 by 28, and we have a
    # minibatch of size 64. Furthermore, lets say we want to combine the predictions
    # from 10 different models.

    data = torch.randn(batches, batch_size, 1, 28, 28, device=device)
    targets = torch.randint(10, (batches * batch_size,), device=device)

    models = [SimpleMLP().to(device) for _ in range(num_models)]

    ######################################################################
    # We have a couple of options for generating predictions. Maybe we want to
    # give each model a different randomized minibatch of data. Alternatively,
    # maybe we want to run the same minibatch of data through each model (e.g.
    # if we were testing the effect of different model initializations).

    ######################################################################
    # Option 1: different minibatch for each model

    minibatches = data[:num_models]
    predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in
                                       zip(models, minibatches)]

    ######################################################################
    # Option 2: Same minibatch

    minibatch = data[0]
    predictions2 = [model(minibatch) for model in models]

    ######################################################################
    # Using ``vmap`` to vectorize the ensemble
    # ----------------------------------------
    #
    # Let's use ``vmap`` to speed up the for-loop. We must first prepare the models
    # for use with ``vmap``.
    #
    # First, let's combine the states of the model together by stacking each
    # parameter. For example, ``model[i].fc1.weight`` has shape ``[784, 128]``; we are
    # going to stack the ``.fc1.weight`` of each of the 10 models to produce a big
    # weight of shape ``[10, 784, 128]``.
    #
    # PyTorch offers the ``torch.func.stack_module_state`` convenience function to do
    # this.
    params, buffers = stack_module_state(models)

    ######################################################################
    # Next, we need to define a function to ``vmap`` over. The function should,
    # given parameters and buffers and inputs, run the model using those
    # parameters, buffers, and inputs. We'll use ``torch.func.functional_call``
    # to help out:

    # Construct a "stateless" version of one of the models. It is "stateless" in
    # the sense that the parameters are meta Tensors and do not have storage.
    base_model = copy.deepcopy(models[0])
    base_model = base_model.to('meta')

    def fmodel(params, buffers, x):
        return functional_call(base_model, (params, buffers), (x,))

    ######################################################################
    # Option 1: get predictions using a different minibatch for each model.
    #
    # By default, ``vmap`` maps a function across the first dimension of all inputs to
    # the passed-in function. After using ``stack_module_state``, each of
    # the ``params`` and buffers have an additional dimension of size 'num_models' at
    # the front, and minibatches has a dimension of size 'num_models'.

    print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension

    # verify minibatch has leading dimension of size 'num_models'
    assert minibatches.shape == (num_models, batch_size, 1, 28, 28)

    predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)

    # verify the ``vmap`` predictions match the
    assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop),
                          atol=1e-3, rtol=1e-5)

    ######################################################################
    # Option 2: get predictions using the same minibatch of data.
    #
    # ``vmap`` has an ``in_dims`` argument that specifies which dimensions to map over.
    # By using ``None``, we tell ``vmap`` we want the same minibatch to apply for all of
    # the 10 models.

    predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)

    assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)

    ######################################################################
    # Performance
    # -----------
    # Curious about performance numbers? Here's how the numbers look.
    if time_it:
        without_vmap = Timer(
            stmt="[model(minibatch) for model, minibatch in zip(models, minibatches)]",
            globals=globals() | locals())
        with_vmap = Timer(
            stmt="vmap(fmodel)(params, buffers, minibatches)",
            globals=globals() | locals())
        print(f'Predictions without vmap {without_vmap.timeit(100)}')
        print(f'Predictions with vmap {with_vmap.timeit(100)}')
    return (models, data, targets, params, buffers, predictions_diff_minibatch_loop,
            predictions2, predictions1_vmap, predictions2_vmap, base_model)


if __name__ == "__main__":
    main(time_it=True)
