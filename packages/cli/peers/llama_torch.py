"""kiln's reference Llama decoder and its training setup in PyTorch: the one definition that every
PyTorch comparison of kiln uses.

Callers: kiln bench's PyTorch peer (train_torch.py, next to this file, on the CPU) and the CUDA
backend's gpu-check baseline (packages/backend-cuda/bench/pytorch_train_step.py, which finds this
file in the workspace or in the gpu-check bundle).

The model is kiln's Llama decoder (packages/trainer/src/model): token embedding; pre-norm blocks of
RMSNorm (weight only) -> causal multi-head attention with rotary embeddings (half-split, on q and k;
grouped kv heads) -> residual, RMSNorm -> SwiGLU MLP -> residual; final RMSNorm; untied LM head;
cross-entropy. Weights start as N(0, 0.02) for matrices and ones for norms. The optimizer is AdamW
(lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices only, as kiln's trainer), used
after a global-norm gradient clip of 1.0.

Numerics: RMSNorm and the loss run in f32 whatever the activation dtype, and the rotary tables are
cast to the activations' dtype, so the same module serves f32 runs and torch.autocast(bfloat16).

torch is passed in by the caller, never imported here: the CPU peer fixes its thread counts in the
environment before torch is first imported.
"""
import math

# The AdamW settings of kiln's trainer.
LEARNING_RATE = 3e-4
BETAS = (0.9, 0.95)
EPSILON = 1e-8
WEIGHT_DECAY = 0.1
# The global gradient-norm clip applied before each optimizer step.
CLIP_NORM = 1.0


def mlp_hidden(d):
    """The SwiGLU hidden width for model width d: round_up(8·d/3, 32), as kiln's defaultMlpHidden."""
    return int(math.ceil(8 * d / 3 / 32) * 32)


def pick_attention(torch):
    """(attend(q, k, v) or None, a name for it): PyTorch's fused causal attention when this torch has it.

    The public F.scaled_dot_product_attention (torch >= 2.0), else torch 1.13's private one, else None:
    the model then writes attention out as softmax(q·kᵀ/√hd + causal mask)·v.
    """
    functional = torch.nn.functional
    if hasattr(functional, "scaled_dot_product_attention"):
        return (lambda q, k, v: functional.scaled_dot_product_attention(q, k, v, is_causal=True)), "F.scaled_dot_product_attention"
    if hasattr(functional, "_scaled_dot_product_attention"):
        return (
            lambda q, k, v: functional._scaled_dot_product_attention(q, k, v, None, 0.0, False, True)[0]
        ), "F._scaled_dot_product_attention (torch 1.13)"
    return None, "softmax(q·kᵀ/√hd + mask)·v"


def build_model(torch, config, attend=None):
    """The decoder as a torch.nn.Module mapping token ids [batch, t] (t ≤ ctx) to logits [batch, t, vocab].

    config: vocab, ctx, d, layers, heads, kv_heads, hidden, eps, theta. attend: from pick_attention
    (None writes attention out). Parameters are created in a fixed order after the caller's seed.
    """
    nn = torch.nn
    functional = torch.nn.functional
    vocab, ctx, d = config["vocab"], config["ctx"], config["d"]
    heads, kv_heads, hidden, eps = config["heads"], config["kv_heads"], config["hidden"], config["eps"]
    head_dim = d // heads
    group = heads // kv_heads

    def matrix(rows, cols):
        return nn.Parameter(torch.randn(rows, cols) * 0.02)

    def rms_norm(x, weight):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * weight.to(x.dtype)

    def rope(x, cos, sin):
        half = head_dim // 2
        first, second = x[..., :half], x[..., half:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_norm = nn.Parameter(torch.ones(d))
            self.q = matrix(heads * head_dim, d)
            self.k = matrix(kv_heads * head_dim, d)
            self.v = matrix(kv_heads * head_dim, d)
            self.o = matrix(d, heads * head_dim)
            self.post_norm = nn.Parameter(torch.ones(d))
            self.gate = matrix(hidden, d)
            self.up = matrix(hidden, d)
            self.down = matrix(d, hidden)

        def forward(self, x, cos, sin, mask):
            b, t, _ = x.shape
            h = rms_norm(x, self.input_norm)
            q = rope(functional.linear(h, self.q).view(b, t, heads, head_dim).transpose(1, 2), cos, sin)
            k = rope(functional.linear(h, self.k).view(b, t, kv_heads, head_dim).transpose(1, 2), cos, sin)
            v = functional.linear(h, self.v).view(b, t, kv_heads, head_dim).transpose(1, 2)
            if group > 1:
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            if attend is not None:
                attended = attend(q, k, v)
            else:
                attended = torch.softmax((q @ k.transpose(-2, -1)) / math.sqrt(head_dim) + mask, dim=-1) @ v
            x = x + functional.linear(attended.transpose(1, 2).reshape(b, t, heads * head_dim), self.o)
            h = rms_norm(x, self.post_norm)
            return x + functional.linear(functional.silu(functional.linear(h, self.gate)) * functional.linear(h, self.up), self.down)

    class Llama(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = matrix(vocab, d)
            self.blocks = nn.ModuleList([Block() for _ in range(config["layers"])])
            self.norm = nn.Parameter(torch.ones(d))
            self.head = matrix(vocab, d)
            positions = torch.arange(ctx, dtype=torch.float64)
            frequencies = config["theta"] ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
            angles = positions[:, None] * frequencies[None, :]
            self.register_buffer("cos", angles.cos().float(), persistent=False)
            self.register_buffer("sin", angles.sin().float(), persistent=False)
            # The causal mask only the written-out attention reads (the fused one is told is_causal).
            causal = torch.full((ctx, ctx), float("-inf")).triu(1) if attend is None else torch.zeros(0)
            self.register_buffer("mask", causal, persistent=False)

        def forward(self, ids):
            t = ids.shape[1]
            x = functional.embedding(ids, self.embed)
            cos, sin = self.cos[:t].to(x.dtype), self.sin[:t].to(x.dtype)
            mask = self.mask[:t, :t].to(x.dtype) if attend is None else None
            for block in self.blocks:
                x = block(x, cos, sin, mask)
            return functional.linear(rms_norm(x, self.norm), self.head)

    return Llama()


def make_optimizer(torch, model):
    """kiln's AdamW over the model's parameters: weight decay on matrices, none on vectors."""
    decayed = [p for p in model.parameters() if p.dim() >= 2]
    plain = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decayed, "weight_decay": WEIGHT_DECAY}, {"params": plain, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=LEARNING_RATE, betas=BETAS, eps=EPSILON)


def next_token_loss(torch, logits, targets):
    """Mean cross-entropy of logits [batch, t, vocab] against targets [batch, t], computed in f32."""
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def optimizer_step(torch, model, optimizer):
    """Clips the gradients' global norm, steps the optimizer and clears the gradients."""
    torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP_NORM)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def median(values):
    """The median of a non-empty list of numbers."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 == 1 else (ordered[middle - 1] + ordered[middle]) / 2
