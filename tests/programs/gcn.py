# Kipf & Welling's pygcn (github.com/tkipf/pygcn: layers.py, models.py, utils.py, train.py)
# with a dense adjacency instead of torch.sparse: GraphConvolution(Module) with
# Parameter(torch.FloatTensor(in, out)) and reset_parameters by .data.uniform_(-stdv, stdv),
# output = adj @ (input @ W) + b, GCN of two layers with F.dropout(training=self.training)
# and F.log_softmax, utils' encode_onehot / normalize (row-normalised with inf -> 0) /
# accuracy (max(1)[1].type_as, eq, double, sum / len), Adam(lr=0.01, weight_decay=5e-4),
# nll_loss on idx_train. The Cora files are replaced by a synthetic two-community graph.
from __future__ import division
from __future__ import print_function

import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.nn.parameter import Parameter
from torch.nn.modules.module import Module


class GraphConvolution(Module):
    """
    Simple GCN layer, similar to https://arxiv.org/abs/1609.02907
    """

    def __init__(self, in_features, out_features, bias=True):
        super(GraphConvolution, self).__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(torch.FloatTensor(in_features, out_features))
        if bias:
            self.bias = Parameter(torch.FloatTensor(out_features))
        else:
            self.register_parameter('bias', None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1. / math.sqrt(self.weight.size(1))
        self.weight.data.uniform_(-stdv, stdv)
        if self.bias is not None:
            self.bias.data.uniform_(-stdv, stdv)

    def forward(self, input, adj):
        support = torch.mm(input, self.weight)
        output = torch.mm(adj, support)
        if self.bias is not None:
            return output + self.bias
        else:
            return output

    def __repr__(self):
        return self.__class__.__name__ + ' (' \
               + str(self.in_features) + ' -> ' \
               + str(self.out_features) + ')'


class GCN(nn.Module):
    def __init__(self, nfeat, nhid, nclass, dropout):
        super(GCN, self).__init__()

        self.gc1 = GraphConvolution(nfeat, nhid)
        self.gc2 = GraphConvolution(nhid, nclass)
        self.dropout = dropout

    def forward(self, x, adj):
        x = F.relu(self.gc1(x, adj))
        x = F.dropout(x, self.dropout, training=self.training)
        x = self.gc2(x, adj)
        return F.log_softmax(x, dim=1)


def encode_onehot(labels):
    classes = set(labels)
    classes_dict = {c: np.identity(len(classes))[i, :] for i, c in
                    enumerate(sorted(classes))}
    labels_onehot = np.array(list(map(classes_dict.get, labels)),
                             dtype=np.int32)
    return labels_onehot


def normalize(mx):
    """Row-normalize matrix"""
    rowsum = np.array(mx.sum(1))
    with np.errstate(divide='ignore'):
        r_inv = np.power(rowsum, -1).flatten()
    r_inv[np.isinf(r_inv)] = 0.
    r_mat_inv = np.diag(r_inv)
    mx = r_mat_inv.dot(mx)
    return mx


def load_data(n=60, nfeat=20, seed=0):
    """A planted-partition graph: two communities (p_in 0.3, p_out 0.02), features that
    carry the label weakly, one isolated node (its row normalises to zero)."""
    print('Loading synthetic dataset...')
    rng = np.random.RandomState(seed)
    labels_raw = np.array(['A' if i < n // 2 else 'B' for i in range(n)])
    same = labels_raw[:, None] == labels_raw[None, :]
    adj = (rng.rand(n, n) < np.where(same, 0.3, 0.02)).astype(np.float32)
    adj = np.triu(adj, 1)
    adj = adj + adj.T
    adj[n - 1, :] = adj[:, n - 1] = 0
    features = (rng.rand(n, nfeat) < 0.2).astype(np.float32)
    features[:, 0] += (labels_raw == 'A')
    labels = encode_onehot(labels_raw)
    features = normalize(features)
    adj = normalize(adj + np.eye(adj.shape[0]))

    idx_train = range(0, n, 3)
    idx_val = range(1, n, 3)
    idx_test = range(2, n, 3)

    features = torch.FloatTensor(np.array(features))
    labels = torch.LongTensor(np.where(labels)[1])
    adj = torch.FloatTensor(np.array(adj))

    idx_train = torch.LongTensor(idx_train)
    idx_val = torch.LongTensor(idx_val)
    idx_test = torch.LongTensor(idx_test)

    return adj, features, labels, idx_train, idx_val, idx_test


def accuracy(output, labels):
    preds = output.max(1)[1].type_as(labels)
    correct = preds.eq(labels).double()
    correct = correct.sum()
    return correct / len(labels)


def train(epoch, model, optimizer, features, adj, labels, idx_train, idx_val, fastmode=False):
    t = time.time()
    model.train()
    optimizer.zero_grad()
    output = model(features, adj)
    loss_train = F.nll_loss(output[idx_train], labels[idx_train])
    acc_train = accuracy(output[idx_train], labels[idx_train])
    loss_train.backward()
    optimizer.step()

    if not fastmode:
        # Evaluate validation set performance separately,
        # deactivates dropout during validation run.
        model.eval()
        output = model(features, adj)

    loss_val = F.nll_loss(output[idx_val], labels[idx_val])
    acc_val = accuracy(output[idx_val], labels[idx_val])
    print('Epoch: {:04d}'.format(epoch+1),
          'loss_train: {:.4f}'.format(loss_train.item()),
          'acc_train: {:.4f}'.format(acc_train.item()),
          'loss_val: {:.4f}'.format(loss_val.item()),
          'acc_val: {:.4f}'.format(acc_val.item()),
          'time: {:.4f}s'.format(time.time() - t))
    return loss_train.item(), loss_val.item()


def test(model, features, adj, labels, idx_test):
    model.eval()
    output = model(features, adj)
    loss_test = F.nll_loss(output[idx_test], labels[idx_test])
    acc_test = accuracy(output[idx_test], labels[idx_test])
    print("Test set results:",
          "loss= {:.4f}".format(loss_test.item()),
          "accuracy= {:.4f}".format(acc_test.item()))
    return loss_test.item(), acc_test.item()


def main(epochs=60, hidden=16, dropout=0.5, lr=0.01, weight_decay=5e-4, seed=42):
    np.random.seed(seed)
    torch.manual_seed(seed)
    adj, features, labels, idx_train, idx_val, idx_test = load_data()
    model = GCN(nfeat=features.shape[1],
                nhid=hidden,
                nclass=labels.max().item() + 1,
                dropout=dropout)
    print(model)
    optimizer = optim.Adam(model.parameters(),
                           lr=lr, weight_decay=weight_decay)
    t_total = time.time()
    history = []
    for epoch in range(epochs):
        history.append(train(epoch, model, optimizer, features, adj, labels, idx_train,
                             idx_val))
    print("Optimization Finished!")
    print("Total time elapsed: {:.4f}s".format(time.time() - t_total))
    return model, history, test(model, features, adj, labels, idx_test)


if __name__ == '__main__':
    main()
