#!/usr/bin/env python3
"""PyTorch baseline for kiln's train-step benchmark on a CUDA GPU (run by scripts/gpu-check.mjs).

The model, optimizer and loss are kiln's PyTorch reference Llama, llama_torch.py (kept with kiln
bench's PyTorch peer in packages/cli/peers; the gpu-check bundle has a copy next to this file):
kiln's reference presets below, byte vocabulary, kv heads = heads, RMSNorm eps 1e-5, rotary theta
10000. One step = forward + backward + global-norm clip (1.0) + AdamW (lr 3e-4, betas 0.9/0.95,
eps 1e-8, weight decay 0.1 on matrices only). Master weights f32; --precision bf16 runs
forward/backward under torch.autocast(bfloat16), as mixed-precision training does. Eager mode, or
with --compile the model through torch.compile(mode="default") (compiled during the warm-up steps,
which then need to be ≥ 1); attention through F.scaled_dot_product_attention.

Prints one JSON object: {"model", "precision", "batch", "context", "mode", "ms_per_step", "tokens_per_second",
"peak_memory_bytes" (torch.cuda.max_memory_allocated over the run), "device", "torch"}.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# Where llama_torch.py is: next to this file in a gpu-check bundle, in packages/cli/peers in the workspace.
MODULE_FOLDERS = [HERE, os.path.join(HERE, "..", "..", "cli", "peers")]

# kiln's reference presets (the trainer's model presets, with the batch kiln bench uses for each).
PRESETS = {
    "tiny": dict(vocab=256, ctx=64, d=64, layers=2, heads=4, batch=8),
    "small": dict(vocab=256, ctx=128, d=128, layers=4, heads=4, batch=16),
    "medium": dict(vocab=256, ctx=256, d=256, layers=6, heads=8, batch=8),
    # GPT-2 small's widths with the byte vocabulary (kiln's gpt2s preset).
    "gpt2s": dict(vocab=256, ctx=1024, d=768, layers=12, heads=12, batch=8),
}


def import_llama_torch():
    """The shared reference model module, or exit 2 naming the folders searched."""
    for folder in MODULE_FOLDERS:
        if os.path.exists(os.path.join(folder, "llama_torch.py")):
            sys.path.insert(0, os.path.normpath(folder))
            import llama_torch

            return llama_torch
    searched = ", ".join(os.path.normpath(folder) for folder in MODULE_FOLDERS)
    print(f"llama_torch.py not found (searched {searched}); run from the kiln workspace or a gpu-check bundle", file=sys.stderr)
    sys.exit(2)


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


def main(argv):
    arguments = parse_arguments(argv)
    llama_torch = import_llama_torch()
    import torch

    if not torch.cuda.is_available():
        print(json.dumps({"skipped": "torch.cuda.is_available() is false"}))
        return 0
    torch.manual_seed(arguments.seed)
    preset = PRESETS[arguments.model]
    device = torch.device("cuda")
    config = dict(preset, kv_heads=preset["heads"], hidden=llama_torch.mlp_hidden(preset["d"]), eps=1e-5, theta=10000.0)
    attend, _ = llama_torch.pick_attention(torch)
    model = llama_torch.build_model(torch, config, attend).to(device)
    forward = torch.compile(model, mode="default") if arguments.compile else model
    optimizer = llama_torch.make_optimizer(torch, model)
    batch, context = arguments.batch or preset["batch"], preset["ctx"]
    torch.cuda.reset_peak_memory_stats()
    generator = torch.Generator(device="cpu").manual_seed(arguments.seed)
    use_bf16 = arguments.precision == "bf16"

    def step():
        window = torch.randint(0, preset["vocab"], (batch, context + 1), generator=generator).to(device, non_blocking=True)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_bf16):
            loss = llama_torch.next_token_loss(torch, forward(window[:, :-1]), window[:, 1:])
        loss.backward()
        llama_torch.optimizer_step(torch, model, optimizer)
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
