"""Train the digits MLP of examples/train_mlp.py and export its prediction, weights included,
to a ``.vmfb`` that the service (app.py) loads with IREE's runtime alone.

    pip install -e '.[examples]'                       # scikit-learn: the digits data
    python examples/service/export_model.py -o model.vmfb
    pyree inspect model.vmfb

The exported function ``predict(images: f32[BATCH, 64]) -> {"logits", "probabilities",
"classes"}`` takes a fixed batch (the service pads smaller requests). The trained weights are
also saved next to the module (``<name>.npz``) so that its answers can be checked without
pyree.
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import train_mlp  # noqa: E402  (examples/train_mlp.py)

import pyree  # noqa: E402
import pyree.nn as nn  # noqa: E402
import pyree.numpy as jnp  # noqa: E402

BATCH = 32
FEATURES = 64


def make_predict(params):
    """The served function: the weights are closed over, so the export embeds them."""

    def predict(images):
        logits = train_mlp.predict(params, images)
        return {"logits": logits, "probabilities": nn.softmax(logits, axis=-1),
                "classes": jnp.argmax(logits, axis=-1).astype(jnp.int32)}

    return predict


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", default="model.vmfb", help="the .vmfb to write")
    parser.add_argument("--epochs", type=int, default=train_mlp.EPOCHS)
    parser.add_argument("--batch", type=int, default=BATCH, help="rows per call")
    args = parser.parse_args(argv)
    params, test_acc = train_mlp.train(args.epochs, verbose=False)
    params = [(np.asarray(w), np.asarray(b)) for w, b in params]
    print(f"trained {args.epochs} epochs: test accuracy {test_acc:.2%}")
    pyree.export(make_predict(params), f"f32[{args.batch},{FEATURES}]", name="predict",
                 path=args.output)
    weights = os.path.splitext(args.output)[0] + ".npz"
    np.savez(weights, **{f"{kind}{i}": value for i, layer in enumerate(params)
                         for kind, value in zip("wb", layer)})
    print(f"wrote {args.output} ({os.path.getsize(args.output)} bytes) and {weights}")


if __name__ == "__main__":
    main()
