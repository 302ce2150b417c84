#!/usr/bin/env python3
"""PyTorch eager baseline for kiln's train-step benchmark (run by scripts/gpu-check.mjs).

The same model as kiln's reference presets (shared/bench/models.json, packages/trainer):
Llama-style decoder, byte vocabulary, RMSNorm (eps 1e-5, no bias), rotary embeddings (theta
10000, half-split) on q and k, causal multi-head attention (no bias), SwiGLU MLP, pre-norm
residual blocks, final RMSNorm, untied LM head, cross-entropy. One step = forward + backward +
global-norm clip (1.0) + AdamW (lr 3e-4, betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices
only). Master weights f32; --precision bf16 runs forward/backward under torch.autocast(bfloat16),
as mixed-precision training does. Eager mode, or with --compile the model through
torch.compile(mode="default") (compiled during the warm-up steps, which then need to be ≥ 1);
attention through F.scaled_dot_product_attention.

Prints one JSON object: {"model", "precision", "batch", "context", "mode", "ms_per_step", "tokens_per_second",
"peak_memory_bytes" (torch.cuda.max_memory_allocated over the run), "device", "torch"}.
"""
import argparse
import json
import math
import statistics
import sys
import time

PRESETS = {
    "tiny": dict(vocab=256, ctx=64, d=64, layers=2, heads=4, batch=8),
    "small": dict(vocab=256, ctx=128, d=128, layers=4, heads=4, batch=16),
    "medium": dict(vocab=256, ctx=256, d=256, layers=6, heads=8, batch=8),
    # GPT-2 small's widths with the byte vocabulary (kiln's gpt2s preset, issue 15).
    "gpt2s": dict(vocab=256, ctx=1024, d=768, layers=12, heads=12, batch=8),
}


def mlp_hidden(d):
    """round_up(8·d/3, 32), as kiln's defaultMlpHidden."""
    return int(math.ceil(8 * d / 3 / 32) * 32)


def parse_arguments(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(PRESETS), default="medium")
    parser.add_argument("--precision", choices=["f32", "bf16"], default="bf16")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=None, help="sequences per step (default: the preset's)")
    parser.add_argument("--compile", action="store_true", help='torch.compile(mode="default") the model (compiled during the warm-up)')
    return parser.parse_args(argv)


def build(torch, preset):
    nn = torch.nn
    F = torch.nn.functional
    d, heads, hidden = preset["d"], preset["heads"], mlp_hidden(preset["d"])
    head_dim = d // heads

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            x32 = x.float()
            return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * self.weight.to(x.dtype)

    def rope(x, cos, sin):
        half = x.shape[-1] // 2
        first, second = x[..., :half], x[..., half:]
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_norm = RMSNorm()
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, d, bias=False)
            self.v = nn.Linear(d, d, bias=False)
            self.o = nn.Linear(d, d, bias=False)
            self.post_norm = RMSNorm()
            self.gate = nn.Linear(d, hidden, bias=False)
            self.up = nn.Linear(d, hidden, bias=False)
            self.down = nn.Linear(hidden, d, bias=False)

        def forward(self, x, cos, sin):
            b, t, _ = x.shape
            h = self.input_norm(x)
            q = self.q(h).view(b, t, heads, head_dim).transpose(1, 2)
            k = self.k(h).view(b, t, heads, head_dim).transpose(1, 2)
            v = self.v(h).view(b, t, heads, head_dim).transpose(1, 2)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(attended.transpose(1, 2).reshape(b, t, d))
            h = self.post_norm(x)
            return x + self.down(F.silu(self.gate(h)) * self.up(h))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(preset["vocab"], d)
            self.blocks = nn.ModuleList([Block() for _ in range(preset["layers"])])
            self.norm = RMSNorm()
            self.head = nn.Linear(d, preset["vocab"], bias=False)
            positions = torch.arange(preset["ctx"], dtype=torch.float64)
            frequencies = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
            angles = positions[:, None] * frequencies[None, :]
            self.register_buffer("cos", angles.cos().float(), persistent=False)
            self.register_buffer("sin", angles.sin().float(), persistent=False)

        def forward(self, ids):
            x = self.embed(ids)
            cos, sin = self.cos.to(x.dtype), self.sin.to(x.dtype)
            for block in self.blocks:
                x = block(x, cos, sin)
            return self.head(self.norm(x))

    return Model()


def main(argv):
    arguments = parse_arguments(argv)
    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch.cuda.is_available() is false"}))
        return 0
    torch.manual_seed(arguments.seed)
    preset = PRESETS[arguments.model]
    device = torch.device("cuda")
    model = build(torch, preset).to(device)
    forward = torch.compile(model, mode="default") if arguments.compile else model
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-4, betas=(0.9, 0.95), eps=1e-8
    )
    batch, context = arguments.batch or preset["batch"], preset["ctx"]
    torch.cuda.reset_peak_memory_stats()
    generator = torch.Generator(device="cpu").manual_seed(arguments.seed)
    use_bf16 = arguments.precision == "bf16"

    def step():
        window = torch.randint(0, preset["vocab"], (batch, context + 1), generator=generator).to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_bf16):
            logits = forward(window[:, :-1])
            loss = torch.nn.functional.cross_entropy(logits.float().view(-1, preset["vocab"]), window[:, 1:].reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    for _ in range(max(arguments.warmup, 1 if arguments.compile else 0)):
        step()
    torch.cuda.synchronize()
    samples = []
    for _ in range(arguments.steps):
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - start) * 1000)
    ms = statistics.median(samples)
    print(json.dumps({
        "model": arguments.model, "precision": arguments.precision, "batch": batch, "context": context,
        "mode": "torch.compile" if arguments.compile else "eager",
        "ms_per_step": ms, "tokens_per_second": batch * context / (ms / 1000),
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
        "device": torch.cuda.get_device_name(0), "torch": torch.__version__,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
