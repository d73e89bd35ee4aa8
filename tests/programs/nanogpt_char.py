# A character-level GPT trained the way Karpathy's nanoGPT (train.py, model.py, sample.py)
# trains one, at toy sizes: the idioms GPU users copy from it, written out afresh here.
#   - the device and precision dance: 'cuda' when torch.cuda.is_available(), bfloat16 when
#     torch.cuda.is_bf16_supported() (else float16 with a GradScaler), autocast only on cuda,
#     TF32 switched on for matmuls and cuDNN;
#   - a uint16 token file read back through np.memmap for every batch, torch.randint offsets,
#     torch.from_numpy(...astype(np.int64)) rows stacked, pin_memory().to(non_blocking=True);
#   - the model: LayerNorm with an optional bias, causal self-attention through
#     F.scaled_dot_product_attention(is_causal=True) when it exists (else a masked softmax over
#     a registered tril buffer), a GELU MLP, the token embedding tied to the output head,
#     self.apply(init) plus a scaled init of the residual projections found by name,
#     AdamW groups split by p.dim() >= 2 and fused= only where inspect says it exists, MFU;
#   - the loop: warmup then cosine lr written into each param_group, gradient accumulation,
#     scaler.scale/unscale_/step/update around clip_grad_norm_, zero_grad(set_to_none=True),
#     a periodic no_grad evaluation in eval mode, a checkpoint dict saved with torch.save and
#     resumed with torch.load(map_location=...) after stripping torch.compile's key prefix,
#     optional torch.compile, wall-clock timing with cuda.synchronize;
#   - sampling with a temperature and a top-k cut, the context cropped to block_size.
import inspect
import math
import os
import pickle
import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
from torch.nn import functional as F

# A small text that repeats, so a tiny model can learn it in a few dozen steps.
CORPUS = ("the quick brown fox jumps over the lazy dog. "
          "a stitch in time saves nine. "
          "all that glitters is not gold. ") * 24


# -- the model -----------------------------------------------------------------------------

class LayerNorm(nn.Module):
    """Layer normalisation whose additive term can be switched off (nn.LayerNorm cannot)."""

    def __init__(self, ndim, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        # one projection makes queries, keys and values for every head at once
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = config.use_sdpa and hasattr(torch.nn.functional,
                                                 'scaled_dot_product_attention')
        if not self.flash:
            # lower-triangular ones: position t may look at positions <= t only
            mask = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer("bias", mask.view(1, 1, config.block_size, config.block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        hs = C // self.n_head
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)
        if self.flash:
            y = torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=None, dropout_p=self.dropout if self.training else 0,
                is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float('-inf'))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # heads side by side again
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):

    def __init__(self, config):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


@dataclass
class GPTConfig:
    block_size: int = 32
    vocab_size: int = 64
    n_layer: int = 2
    n_head: int = 2
    n_embd: int = 32
    dropout: float = 0.0
    bias: bool = True
    use_sdpa: bool = True


class GPT(nn.Module):

    def __init__(self, config):
        super().__init__()
        assert config.vocab_size is not None and config.block_size is not None
        self.config = config
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(config.vocab_size, config.n_embd),
            wpe=nn.Embedding(config.block_size, config.n_embd),
            drop=nn.Dropout(config.dropout),
            h=nn.ModuleList([Block(config) for _ in range(config.n_layer)]),
            ln_f=LayerNorm(config.n_embd, bias=config.bias),
        ))
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # the input embedding and the output head share one matrix
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        # residual projections start smaller, by 1/sqrt(number of residual additions)
        for pn, p in self.named_parameters():
            if pn.endswith('c_proj.weight'):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))
        print("number of parameters: %.2fK" % (self.get_num_params() / 1e3,))

    def get_num_params(self, non_embedding=True):
        """Parameters counted once (the tied matrix once); without the position table unless
        non_embedding is False."""
        n_params = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n_params -= self.transformer.wpe.weight.numel()
        return n_params

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx, targets=None):
        device = idx.device
        b, t = idx.size()
        assert t <= self.config.block_size, f"sequence of {t} > block size {self.config.block_size}"
        pos = torch.arange(0, t, dtype=torch.long, device=device)
        tok_emb = self.transformer.wte(idx)     # (b, t, n_embd)
        pos_emb = self.transformer.wpe(pos)     # (t, n_embd)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1),
                                   ignore_index=-1)
        else:
            # sampling needs the last position only; the list index keeps the time axis
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def crop_block_size(self, block_size):
        """Shrink the context window of a trained model (positions past block_size dropped)."""
        assert block_size <= self.config.block_size
        self.config.block_size = block_size
        self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
        for block in self.transformer.h:
            if hasattr(block.attn, 'bias'):
                block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

    def configure_optimizers(self, weight_decay, learning_rate, betas, device_type):
        param_dict = {pn: p for pn, p in self.named_parameters()}
        param_dict = {pn: p for pn, p in param_dict.items() if p.requires_grad}
        # matrices (and the embeddings) decay; biases and norm gains do not
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {'params': decay_params, 'weight_decay': weight_decay},
            {'params': nodecay_params, 'weight_decay': 0.0},
        ]
        num_decay_params = sum(p.numel() for p in decay_params)
        num_nodecay_params = sum(p.numel() for p in nodecay_params)
        print(f"decayed tensors: {len(decay_params)}, {num_decay_params:,} parameters")
        print(f"non-decayed tensors: {len(nodecay_params)}, {num_nodecay_params:,} parameters")
        fused_available = 'fused' in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and device_type == 'cuda'
        extra_args = dict(fused=True) if use_fused else dict()
        optimizer = torch.optim.AdamW(optim_groups, lr=learning_rate, betas=betas, **extra_args)
        print(f"using fused AdamW: {use_fused}")
        self.used_fused = use_fused
        return optimizer

    def estimate_mfu(self, fwdbwd_per_iter, dt, peak_flops=312e12):
        """Model flops utilisation: achieved flops per second over peak_flops (A100 bfloat16
        by default), counting 6 flops per parameter per token plus attention's products."""
        N = self.get_num_params()
        cfg = self.config
        L, H, Q, T = cfg.n_layer, cfg.n_head, cfg.n_embd // cfg.n_head, cfg.block_size
        flops_per_token = 6 * N + 12 * L * H * Q * T
        flops_per_iter = flops_per_token * T * fwdbwd_per_iter
        return flops_per_iter / dt / peak_flops

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None):
        """Append max_new_tokens sampled tokens to idx (b, t) of token ids."""
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size \
                else idx[:, -self.config.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float('Inf')
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1)
            idx = torch.cat((idx, idx_next), dim=1)
        return idx


# -- data ----------------------------------------------------------------------------------

def prepare(data_dir, text=CORPUS):
    """Write train.bin / val.bin (uint16 token ids) and meta.pkl (the vocabulary)."""
    os.makedirs(data_dir, exist_ok=True)
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    ids = [stoi[c] for c in text]
    n = len(ids)
    np.array(ids[:int(n * 0.9)], dtype=np.uint16).tofile(os.path.join(data_dir, 'train.bin'))
    np.array(ids[int(n * 0.9):], dtype=np.uint16).tofile(os.path.join(data_dir, 'val.bin'))
    with open(os.path.join(data_dir, 'meta.pkl'), 'wb') as f:
        pickle.dump({'vocab_size': len(chars), 'itos': itos, 'stoi': stoi}, f)


# -- training ------------------------------------------------------------------------------

DEFAULTS = dict(
    out_dir='out', data_dir='data', eval_interval=20, log_interval=1, eval_iters=4,
    eval_only=False, always_save_checkpoint=True, init_from='scratch',
    gradient_accumulation_steps=2, batch_size=8, block_size=32,
    n_layer=2, n_head=2, n_embd=32, dropout=0.0, bias=True, use_sdpa=True,
    learning_rate=1e-2, max_iters=40, weight_decay=1e-1, beta1=0.9, beta2=0.99, grad_clip=1.0,
    decay_lr=True, warmup_iters=5, lr_decay_iters=40, min_lr=1e-3,
    device=None, dtype=None, compile=False, seed=1337,
    sample_start="the ", sample_tokens=24, temperature=0.8, top_k=5,
)


def main(**overrides):
    unknown = set(overrides) - set(DEFAULTS)
    if unknown:
        raise ValueError(f"unknown settings: {sorted(unknown)}")
    config = dict(DEFAULTS, **overrides)
    out_dir, data_dir = config['out_dir'], config['data_dir']
    batch_size, block_size = config['batch_size'], config['block_size']
    gradient_accumulation_steps = config['gradient_accumulation_steps']

    device = config['device'] or ('cuda' if torch.cuda.is_available() else 'cpu')
    device_type = 'cuda' if 'cuda' in device else 'cpu'  # for autocast and pinned memory
    dtype = config['dtype']
    if dtype is None:
        if device_type == 'cuda':
            dtype = ('bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported()
                     else 'float16')
        else:
            dtype = 'float32'
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(config['seed'])
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    ptdtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16,
               'float16': torch.float16}[dtype]
    ctx = nullcontext() if device_type == 'cpu' else torch.amp.autocast(
        device_type=device_type, dtype=ptdtype)

    if not os.path.exists(os.path.join(data_dir, 'train.bin')):
        prepare(data_dir)
    with open(os.path.join(data_dir, 'meta.pkl'), 'rb') as f:
        meta = pickle.load(f)
    meta_vocab_size = meta['vocab_size']
    stoi, itos = meta['stoi'], meta['itos']

    def get_batch(split):
        # a fresh memmap per batch (a long-lived one keeps growing its page cache)
        name = 'train.bin' if split == 'train' else 'val.bin'
        data = np.memmap(os.path.join(data_dir, name), dtype=np.uint16, mode='r')
        ix = torch.randint(len(data) - block_size, (batch_size,))
        x = torch.stack([torch.from_numpy((data[i:i + block_size]).astype(np.int64)) for i in ix])
        y = torch.stack([torch.from_numpy((data[i + 1:i + 1 + block_size]).astype(np.int64))
                         for i in ix])
        if device_type == 'cuda':
            x = x.pin_memory().to(device, non_blocking=True)
            y = y.pin_memory().to(device, non_blocking=True)
        else:
            x, y = x.to(device), y.to(device)
        return x, y

    iter_num = 0
    best_val_loss = 1e9
    model_args = dict(n_layer=config['n_layer'], n_head=config['n_head'],
                      n_embd=config['n_embd'], block_size=block_size, bias=config['bias'],
                      vocab_size=meta_vocab_size, dropout=config['dropout'],
                      use_sdpa=config['use_sdpa'])
    resumed = None
    if config['init_from'] == 'scratch':
        model = GPT(GPTConfig(**model_args))
    elif config['init_from'] == 'resume':
        print(f"resuming training from {out_dir}")
        checkpoint = torch.load(os.path.join(out_dir, 'ckpt.pt'), map_location=device)
        checkpoint_model_args = checkpoint['model_args']
        # the architecture comes from the checkpoint; other settings may change
        for k in ['n_layer', 'n_head', 'n_embd', 'block_size', 'bias', 'vocab_size',
                  'use_sdpa']:
            model_args[k] = checkpoint_model_args[k]
        model = GPT(GPTConfig(**model_args))
        state_dict = checkpoint['model']
        unwanted_prefix = '_orig_mod.'  # what a torch.compile'd module's state_dict adds
        for k, v in list(state_dict.items()):
            if k.startswith(unwanted_prefix):
                state_dict[k[len(unwanted_prefix):]] = state_dict.pop(k)
        model.load_state_dict(state_dict)
        iter_num = checkpoint['iter_num']
        best_val_loss = checkpoint['best_val_loss']
    else:
        raise ValueError(f"init_from={config['init_from']!r}")
    model.to(device)

    scaler = torch.amp.GradScaler(device_type, enabled=(dtype == 'float16'))
    optimizer = model.configure_optimizers(config['weight_decay'], config['learning_rate'],
                                           (config['beta1'], config['beta2']), device_type)
    if config['init_from'] == 'resume':
        optimizer.load_state_dict(checkpoint['optimizer'])
        resumed = dict(iter_num=iter_num, best_val_loss=best_val_loss,
                       state=[{k: v.clone() if torch.is_tensor(v) else v
                               for k, v in optimizer.state[p].items()}
                              for g in optimizer.param_groups for p in g['params']])
    checkpoint = None  # let the loaded tensors go

    if config['compile']:
        print("compiling the model")
        unoptimized_model = model  # noqa: F841  (kept, as the script keeps it)
        model = torch.compile(model)
    raw_model = model  # (model.module under DistributedDataParallel)

    @torch.no_grad()
    def estimate_loss():
        out = {}
        model.eval()
        for split in ['train', 'val']:
            losses = torch.zeros(config['eval_iters'])
            for k in range(config['eval_iters']):
                X, Y = get_batch(split)
                with ctx:
                    logits, loss = model(X, Y)
                losses[k] = loss.item()
            out[split] = losses.mean()
        model.train()
        return out

    def get_lr(it):
        warmup, decay_iters = config['warmup_iters'], config['lr_decay_iters']
        lr, min_lr = config['learning_rate'], config['min_lr']
        if it < warmup:                       # linear warmup
            return lr * (it + 1) / (warmup + 1)
        if it > decay_iters:                  # past the schedule: the floor
            return min_lr
        ratio = (it - warmup) / (decay_iters - warmup)
        coeff = 0.5 * (1.0 + math.cos(math.pi * ratio))  # 1 -> 0 along half a cosine
        return min_lr + coeff * (lr - min_lr)

    history = dict(iters=[], losses=[], lrs=[], evals=[], saved=[], times=[])
    X, Y = get_batch('train')
    t0 = time.time()
    local_iter_num = 0
    running_mfu = -1.0
    while True:
        lr = get_lr(iter_num) if config['decay_lr'] else config['learning_rate']
        for param_group in optimizer.param_groups:
            param_group['lr'] = lr

        if iter_num % config['eval_interval'] == 0:
            losses = estimate_loss()
            print(f"step {iter_num}: train loss {losses['train']:.4f}, "
                  f"val loss {losses['val']:.4f}")
            history['evals'].append((iter_num, float(losses['train']), float(losses['val'])))
            if losses['val'] < best_val_loss or config['always_save_checkpoint']:
                best_val_loss = losses['val']
                if iter_num > 0:
                    checkpoint = {
                        'model': raw_model.state_dict(),
                        'optimizer': optimizer.state_dict(),
                        'model_args': model_args,
                        'iter_num': iter_num,
                        'best_val_loss': best_val_loss,
                        'config': config,
                    }
                    print(f"saving checkpoint to {out_dir}")
                    torch.save(checkpoint, os.path.join(out_dir, 'ckpt.pt'))
                    history['saved'].append(iter_num)
        if iter_num == 0 and config['eval_only']:
            break

        for micro_step in range(gradient_accumulation_steps):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / gradient_accumulation_steps  # the mean over the micro-batches
            X, Y = get_batch('train')  # fetch the next batch while the device works
            scaler.scale(loss).backward()
        if config['grad_clip'] != 0.0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config['grad_clip'])
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

        if device_type == 'cuda':
            torch.cuda.synchronize()
        t1 = time.time()
        dt = t1 - t0
        t0 = t1
        if iter_num % config['log_interval'] == 0:
            lossf = loss.item() * gradient_accumulation_steps  # a host sync: log sparingly
            if local_iter_num >= 5:
                mfu = raw_model.estimate_mfu(batch_size * gradient_accumulation_steps, dt)
                running_mfu = mfu if running_mfu == -1.0 else 0.9 * running_mfu + 0.1 * mfu
            print(f"iter {iter_num}: loss {lossf:.4f}, time {dt * 1000:.2f}ms, "
                  f"mfu {running_mfu * 100:.4f}%")
            history['iters'].append(iter_num)
            history['losses'].append(lossf)
            history['lrs'].append(lr)
            history['times'].append(dt)
        iter_num += 1
        local_iter_num += 1
        if iter_num > config['max_iters']:
            break

    # sample.py: encode a prompt, generate under no_grad and the same autocast context
    start_ids = [stoi[c] for c in config['sample_start']]
    x = torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...]
    with torch.no_grad():
        with ctx:
            y = raw_model.generate(x, config['sample_tokens'], temperature=config['temperature'],
                                   top_k=config['top_k'])
    tokens = y[0].tolist()
    text = ''.join(itos[i] for i in tokens)
    print(text)
    return dict(history=history, model=raw_model, optimizer=optimizer, iter_num=iter_num,
                best_val_loss=best_val_loss, tokens=tokens, text=text, vocab_size=meta_vocab_size,
                device=device, dtype=dtype, ptdtype=ptdtype, scaler=scaler, resumed=resumed,
                running_mfu=running_mfu, config=config, used_fused=raw_model.used_fused)
