#!/usr/bin/python3
"""kiln bench's PyTorch peer: the train step of one of kiln's reference models, in PyTorch on the CPU.

The model, optimizer and loss are llama_torch.py's (next to this file; the same definition the CUDA
backend's gpu-check baseline uses): kiln's Llama decoder with grouped kv heads, AdamW after a
global-norm clip. Attention is PyTorch's fused scaled-dot-product attention when this torch has it
(the public one, or torch 1.13's private one), the written-out softmax otherwise: the counterpart of
kiln's fused flash attention.

Usage (kiln bench runs it; the sizes come from kiln's presets):
  /usr/bin/python3 train_torch.py --threads 1 --steps 10 --warmup 2 \
      --config '{"name":"tiny","vocab":256,"ctx":64,"d":64,"layers":2,"heads":4,"kvHeads":4,"hidden":192,"batch":8,"eps":1e-5,"theta":10000}'
Prints one JSON object: {"name", "threads", "torch", "attention", "msPerStep", "minMsPerStep", "tokensPerSecond", "loss"}.
With --hf-config it fine-tunes a transformers model of a Hugging Face config instead (see main_fine_tune).
The thread count is fixed before torch is imported (OMP/OpenBLAS/MKL read it at load) and with set_num_threads.
"""
import json
import os
import sys

import llama_torch  # next to this file: Python puts a script's own folder first on sys.path


def argument(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main():
    threads = int(argument("--threads", "1"))
    steps = int(argument("--steps", "10"))
    warmup = int(argument("--warmup", "2"))
    config = json.loads(argument("--config", "{}"))
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    import time

    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    attend, attention_kind = llama_torch.pick_attention(torch)
    vocab, ctx, batch = config["vocab"], config["ctx"], config["batch"]
    model = llama_torch.build_model(torch, {
        "vocab": vocab, "ctx": ctx, "d": config["d"], "layers": config["layers"], "heads": config["heads"],
        "kv_heads": config["kvHeads"], "hidden": config["hidden"], "eps": config["eps"], "theta": config["theta"],
    }, attend)
    optimizer = llama_torch.make_optimizer(torch, model)

    generator = torch.Generator().manual_seed(1)
    data = torch.randint(0, vocab, (steps + warmup, batch, ctx + 1), generator=generator)
    times, loss_value = [], float("nan")
    for step in range(steps + warmup):
        ids, targets = data[step, :, :-1], data[step, :, 1:]
        start = time.perf_counter()
        loss = llama_torch.next_token_loss(torch, model(ids), targets)
        loss.backward()
        llama_torch.optimizer_step(torch, model, optimizer)
        loss_value = loss.item()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    median = llama_torch.median(times)
    print(json.dumps({
        "name": config["name"], "threads": torch.get_num_threads(), "torch": torch.__version__, "attention": attention_kind,
        "msPerStep": median * 1e3, "minMsPerStep": min(times) * 1e3, "tokensPerSecond": batch * ctx / median, "loss": loss_value,
    }), flush=True)


def main_fine_tune():
    """--hf-config: fine-tune a transformers model of that config (random weights), fully or with a PEFT LoRA adapter.

    Usage: train_torch.py --hf-config '{"model_type":"llama",...}' --mode lora|full --lora '{"r":8,"alpha":16,"targets":["q_proj"]}'
           --batch 1 --ctx 32 --threads 1 --steps 2 --warmup 1 [--device cpu|cuda]
    Prints {"mode", "threads", "torch", "transformers", "peft", "device", "msPerStep", "tokensPerSecond", "trainableParameters",
    "peakMemoryBytes", "memoryKind", "loss"}; exits 3 when transformers (or, for LoRA, peft) cannot be imported.
    """
    threads = int(argument("--threads", "1"))
    steps = int(argument("--steps", "2"))
    warmup = int(argument("--warmup", "1"))
    batch = int(argument("--batch", "1"))
    ctx = int(argument("--ctx", "32"))
    mode = argument("--mode", "full")
    device = argument("--device", "cpu")
    hf_config = json.loads(argument("--hf-config", "{}"))
    lora = json.loads(argument("--lora", "{}"))
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(threads)
    import resource
    import time

    import torch
    import torch.nn.functional as F
    try:
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM
    except ImportError as error:
        print(f"transformers cannot be imported: {error}", file=sys.stderr)
        sys.exit(3)
    peft_version = None
    if mode == "lora":
        try:
            import peft
            from peft import LoraConfig, get_peft_model
        except ImportError as error:
            print(f"peft cannot be imported: {error}", file=sys.stderr)
            sys.exit(3)
        peft_version = peft.__version__

    if device == "cuda" and not torch.cuda.is_available():
        print(f"torch {torch.__version__} has no CUDA device", file=sys.stderr)
        sys.exit(3)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    fields = dict(hf_config)
    model_type = fields.pop("model_type")
    config = AutoConfig.for_model(model_type, **fields)
    model = AutoModelForCausalLM.from_config(config).to(device)
    if mode == "lora":
        model = get_peft_model(model, LoraConfig(r=lora["r"], lora_alpha=lora["alpha"], lora_dropout=0.0, target_modules=lora["targets"]))
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    vocab = hf_config["vocab_size"]
    generator = torch.Generator().manual_seed(1)
    data = torch.randint(0, vocab, (steps + warmup, batch, ctx + 1), generator=generator).to(device)
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times, loss_value = [], float("nan")
    for step in range(steps + warmup):
        ids, targets = data[step, :, :-1], data[step, :, 1:]
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        logits = model(input_ids=ids).logits
        loss = F.cross_entropy(logits.float().reshape(-1, vocab), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        optimizer.step()
        loss_value = loss.item()
        if device == "cuda":
            torch.cuda.synchronize()
        if step >= warmup:
            times.append(time.perf_counter() - start)
    median = llama_torch.median(times)
    if device == "cuda":
        peak, kind = torch.cuda.max_memory_allocated(), "torch.cuda.max_memory_allocated"
    else:
        peak, kind = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, "process peak RSS"
    print(json.dumps({
        "mode": mode, "threads": torch.get_num_threads(), "torch": torch.__version__, "transformers": transformers.__version__,
        "peft": peft_version, "device": device, "msPerStep": median * 1e3, "tokensPerSecond": batch * ctx / median,
        "trainableParameters": sum(p.numel() for p in trainable), "peakMemoryBytes": peak, "memoryKind": kind, "loss": loss_value,
    }), flush=True)


if __name__ == "__main__":
    if "--hf-config" in sys.argv:
        main_fine_tune()
    else:
        main()
