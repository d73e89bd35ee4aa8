# PyTorch's recipe "PyTorch Profiler" (recipes/recipes/profiler_recipe.py): profile a model's
# inference with record_function("model_inference"), print key_averages() tables sorted by
# CPU time (and grouped by input shape), export a Chrome trace, then a long-running job
# profiled with torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1) and an
# on_trace_ready handler that prints the table and exports a trace per cycle. The recipe's
# torchvision resnet18 is replaced by a small CNN of the same layer kinds (Conv2d, BatchNorm2d,
# ReLU, MaxPool2d, AdaptiveAvgPool2d, Linear) at 16x16.
import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile, record_function


class SmallNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.relu(self.conv2(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def make(batch=5):
    torch.manual_seed(0)
    model = SmallNet()
    inputs = torch.randn(batch, 3, 16, 16)
    return model, inputs


def profile_inference(model, inputs, trace_path="trace.json"):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            model(inputs)
    print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
    print(prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                             row_limit=10))
    prof.export_chrome_trace(trace_path)
    return prof


def profile_long_running(model, inputs, steps=8):
    traces = []

    def trace_handler(p):
        output = p.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)
        print(output)
        p.export_chrome_trace("test_trace_" + str(p.step_num) + ".json")  # recipe: in /tmp/
        traces.append((p.step_num, p.key_averages()))

    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=trace_handler,
    ) as p:
        for idx in range(steps):
            model(inputs)
            p.step()
    return traces


def main(trace_path="trace.json"):
    model, inputs = make()
    model.eval()
    prof = profile_inference(model, inputs, trace_path)
    traces = profile_long_running(model, inputs)
    return prof, traces
