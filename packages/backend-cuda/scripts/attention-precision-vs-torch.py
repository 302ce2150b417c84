#!/usr/bin/env python3
"""PyTorch side of kiln's f32 attention-gradient precision check (scripts/gpu-check-attention-precision.mjs).

Reads <directory>/manifest.json ({"batch", "heads", "length", "head_dim", "seeds"}) and, per seed s,
q_s.bin, k_s.bin, v_s.bin, d_out_s.bin: raw little-endian f32 [B, H, T, D]. For each seed, runs
torch.nn.functional.scaled_dot_product_attention (causal, default scale) in f32 on the GPU
(TF32 off) and writes torch_dq_s.bin, torch_dk_s.bin, torch_dv_s.bin (f32), and the float64
gradients of the same math on the GPU as ref_dq_s.bin, … (float64). Prints one JSON line:
{"torch", "device", "sdpa_backend"} or {"error": ...}.
"""
import json
import os
import sys


def main():
    directory = sys.argv[1]
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
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(directory, "manifest.json")) as handle:
        manifest = json.load(handle)
    shape = (manifest["batch"], manifest["heads"], manifest["length"], manifest["head_dim"])

    def load(name):
        values = np.fromfile(os.path.join(directory, name), dtype="<f4").reshape(shape)
        return torch.from_numpy(values.copy()).cuda()

    for seed in manifest["seeds"]:
        inputs = [load(f"{name}_{seed}.bin") for name in ("q", "k", "v", "d_out")]
        for dtype, prefix in ((torch.float32, "torch"), (torch.float64, "ref")):
            q, k, v = (tensor.detach().to(dtype).clone().requires_grad_(True) for tensor in inputs[:3])
            out = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            out.backward(inputs[3].detach().to(dtype))
            for name, tensor in (("dq", q.grad), ("dk", k.grad), ("dv", v.grad)):
                numpy_dtype = "<f4" if dtype == torch.float32 else "<f8"
                tensor.detach().cpu().numpy().astype(numpy_dtype).tofile(os.path.join(directory, f"{prefix}_{name}_{seed}.bin"))
    print(json.dumps({"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
