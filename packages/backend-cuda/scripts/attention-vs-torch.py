#!/usr/bin/env python3
"""PyTorch side of kiln's attention check (run by scripts/gpu-check-attention.mjs on a GPU machine).

Reads <directory>/manifest.json, written by gpu-check:
    {"batch", "heads_q", "heads_kv", "length_q", "length_k", "head_dim", "causal", "scale",
     "warmup", "repeats"}
and the inputs q.bin, k.bin, v.bin, d_out.bin: raw little-endian bf16, row-major
[B, H, T, D] (q and d_out with Hq heads, k and v with Hkv heads) — the very tensors kiln used.

Then, on the GPU:
  1. times torch.nn.functional.scaled_dot_product_attention in bf16, forward and
     forward + backward (CUDA events, after warm-up), whatever SDPA backend torch picks;
  2. writes torch's outputs torch_out/dq/dk/dv.bin (bf16);
  3. computes an f32 reference (explicit softmax, TF32 off, one batch at a time, kiln's
     definitions: causal aligned to the end, GQA head h → kv head h / (Hq/Hkv), dk/dv summed
     over the group) and writes ref_out/lse/dq/dk/dv.bin (f32).
Prints one JSON line: versions, device, timings in milliseconds (or {"error": ...}).
gpu-check compares kiln and torch against the reference and reports the speed ratio.
"""
import argparse
import json
import os
import sys


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directory", help="folder holding manifest.json and the inputs; outputs are written there")
    parser.add_argument("--skip-reference", action="store_true", help="only time torch and write its outputs")
    return parser.parse_args()


def timed_milliseconds(torch, function, warmup, repeats):
    for _ in range(warmup):
        function()
    torch.cuda.synchronize()
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeats):
        function()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / repeats


def main():
    arguments = parse_arguments()
    try:
        import numpy as np
        import torch
        import torch.nn.functional as functional
    except ImportError as error:
        print(json.dumps({"error": f"PyTorch is not available ({error})"}))
        return 2
    if not torch.cuda.is_available():
        print(json.dumps({"error": "torch.cuda.is_available() is False"}))
        return 2

    directory = arguments.directory
    with open(os.path.join(directory, "manifest.json"), encoding="utf8") as handle:
        manifest = json.load(handle)
    batch, heads_q, heads_kv = manifest["batch"], manifest["heads_q"], manifest["heads_kv"]
    length_q, length_k, head_dim = manifest["length_q"], manifest["length_k"], manifest["head_dim"]
    causal, scale = bool(manifest["causal"]), float(manifest["scale"])
    group = heads_q // heads_kv
    device = torch.device("cuda")

    def load(name, heads, length):
        raw = np.fromfile(os.path.join(directory, name), dtype=np.int16)
        return torch.from_numpy(raw).to(device).view(torch.bfloat16).reshape(batch, heads, length, head_dim)

    def save(tensor, name):
        tensor = tensor.detach().contiguous()
        if tensor.dtype == torch.bfloat16:
            tensor = tensor.view(torch.int16)
        tensor.cpu().numpy().tofile(os.path.join(directory, name))

    q = load("q.bin", heads_q, length_q)
    k = load("k.bin", heads_kv, length_k)
    v = load("v.bin", heads_kv, length_k)
    d_out = load("d_out.bin", heads_q, length_q)

    # kiln's causal mask is aligned to the end (query i sees keys j <= i + Tk - Tq); torch's
    # is_causal is aligned to the start, so it is used only when Tq == Tk.
    allowed = None
    if causal:
        allowed = torch.ones(length_q, length_k, dtype=torch.bool, device=device).tril(diagonal=length_k - length_q)
    sdpa_options = {"scale": scale, "enable_gqa": group > 1}
    if causal and length_q == length_k:
        sdpa_options["is_causal"] = True
    elif causal:
        sdpa_options["attn_mask"] = allowed

    def forward(query, key, value):
        return functional.scaled_dot_product_attention(query, key, value, **sdpa_options)

    leaves = [tensor.detach().clone().requires_grad_(True) for tensor in (q, k, v)]

    def forward_backward():
        for leaf in leaves:
            leaf.grad = None
        forward(*leaves).backward(d_out)

    warmup, repeats = int(manifest.get("warmup", 3)), int(manifest.get("repeats", 20))
    with torch.no_grad():
        forward_ms = timed_milliseconds(torch, lambda: forward(q, k, v), warmup, repeats)
    forward_backward_ms = timed_milliseconds(torch, forward_backward, warmup, repeats)

    with torch.no_grad():
        save(forward(q, k, v), "torch_out.bin")
    forward_backward()
    for leaf, name in zip(leaves, ("torch_dq.bin", "torch_dk.bin", "torch_dv.bin")):
        save(leaf.grad, name)

    if not arguments.skip_reference:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        outputs = {name: [] for name in ("out", "lse", "dq", "dk", "dv")}
        for index in range(batch):
            query = q[index].float()
            key = k[index].float().repeat_interleave(group, dim=0)
            value = v[index].float().repeat_interleave(group, dim=0)
            gradient = d_out[index].float()
            scores = torch.matmul(query, key.transpose(-1, -2)) * scale
            if allowed is not None:
                scores = scores.masked_fill(~allowed, float("-inf"))
            lse = torch.logsumexp(scores, dim=-1)
            # Rows without keys (lse = -inf) get probabilities 0, out 0, as kiln defines them.
            probabilities = torch.nan_to_num(torch.exp(scores - lse[..., None]), nan=0.0)
            out = torch.matmul(probabilities, value)
            dv = torch.matmul(probabilities.transpose(-1, -2), gradient)
            dp = torch.matmul(gradient, value.transpose(-1, -2))
            delta = (gradient * out).sum(dim=-1, keepdim=True)
            ds = probabilities * (dp - delta)
            dq = torch.matmul(ds, key) * scale
            dk = torch.matmul(ds.transpose(-1, -2), query) * scale
            outputs["out"].append(out)
            outputs["lse"].append(lse)
            outputs["dq"].append(dq)
            outputs["dk"].append(dk.reshape(heads_kv, group, length_k, head_dim).sum(dim=1))
            outputs["dv"].append(dv.reshape(heads_kv, group, length_k, head_dim).sum(dim=1))
        for name, parts in outputs.items():
            save(torch.stack(parts), f"ref_{name}.bin")

    print(json.dumps({
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(device),
        "sdpaBackends": {
            "flash": torch.backends.cuda.flash_sdp_enabled(),
            "cudnn": torch.backends.cuda.cudnn_sdp_enabled(),
            "memoryEfficient": torch.backends.cuda.mem_efficient_sdp_enabled(),
            "math": torch.backends.cuda.math_sdp_enabled(),
        },
        "forwardMs": forward_ms,
        "forwardBackwardMs": forward_backward_ms,
        "reference": not arguments.skip_reference,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
