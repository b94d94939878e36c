"""An HTTP service that serves the digits MLP exported by export_model.py.

It needs IREE's runtime, NumPy and the web stack only (``pip install iree-base-runtime numpy
starlette uvicorn`` plus pyree's runtime package); it never imports a compiler. Run it with

    python examples/service/app.py --model model.vmfb --port 8000
    # or, several processes behind one port:
    MODEL=model.vmfb uvicorn app:app --app-dir examples/service --port 8000 --workers 2

and ask it::

    curl -s localhost:8000/v1/predict -d '{"instances": [[0.0, 0.5, ...64 numbers...]]}'
    # {"classes": [3], "probabilities": [[...10 numbers...]]}

Endpoints: ``POST /v1/predict`` (1 to 1024 rows of 64 pixel values in [0, 1]),
``GET /v1/model`` (the module's signature), ``GET /healthz``. Bad requests get a 4xx with a
JSON ``{"error": ...}``: 400 for malformed JSON, 413 for bodies over 1 MiB, 422 for rows of the
wrong length or type.

Why Starlette on Uvicorn: an ASGI server keeps slow or idle clients from tying up threads,
Uvicorn is the server most Python services in production run (alone or under a process
manager), and Starlette is the small, typed core that FastAPI itself is built on: routing,
requests and responses without a validation framework we would not use (the model's own
signature says what an input must be). Inference runs in Starlette's thread pool, so the
event loop keeps accepting requests while IREE computes.
"""
from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

import numpy as np
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from pyree.runtime import load

MAX_BODY_BYTES = 1 << 20
MAX_ROWS = 1024


class BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Model:
    """The exported ``predict`` over fixed batches: requests are split and padded."""

    def __init__(self, path: str) -> None:
        self.module = load(path)
        self.predict = self.module.predict
        (self.batch, self.features), = [a.shape for a in self.predict.in_avals]

    def __call__(self, rows: np.ndarray) -> dict[str, list]:
        classes, probabilities = [], []
        for start in range(0, len(rows), self.batch):
            chunk = rows[start:start + self.batch]
            padded = np.zeros((self.batch, self.features), np.float32)
            padded[:len(chunk)] = chunk
            out = self.predict(padded)
            classes.append(np.asarray(out["classes"])[:len(chunk)])
            probabilities.append(np.asarray(out["probabilities"])[:len(chunk)])
        return {"classes": np.concatenate(classes).tolist(),
                "probabilities": np.concatenate(probabilities).astype(float).round(6).tolist()}


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadRequest(413, f"request body of {declared} bytes is over the limit of "
                         f"{MAX_BODY_BYTES}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise BadRequest(413, f"request body is over the limit of {MAX_BODY_BYTES} bytes")
    return bytes(body)


def _rows(payload: Any, features: int) -> np.ndarray:
    if not isinstance(payload, dict) or "instances" not in payload:
        raise BadRequest(422, 'expected a JSON object {"instances": [[...], ...]}')
    rows = payload["instances"]
    if not isinstance(rows, list) or not rows:
        raise BadRequest(422, '"instances" must be a non-empty list of rows')
    if len(rows) > MAX_ROWS:
        raise BadRequest(413, f"{len(rows)} rows is over the limit of {MAX_ROWS} per request")
    for i, row in enumerate(rows):
        if not isinstance(row, list) or len(row) != features:
            got = f"{len(row)} values" if isinstance(row, list) else type(row).__name__
            raise BadRequest(422, f"row {i} must be a list of {features} numbers, got {got}")
        for value in row:
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not _fits_float32(value):
                shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
                raise BadRequest(422, f"row {i} holds {shown}, not a finite float32 number")
    return np.asarray(rows, np.float32)


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _fits_float32(value: float) -> bool:
    """Finite, and finite as float32 (10**400 or 1e39 would become inf in the model)."""
    try:
        number = float(value)
    except OverflowError:  # an integer past float64's range
        return False
    return math.isfinite(number) and abs(number) <= _FLOAT32_MAX


def create_app(model_path: str) -> Starlette:
    """The ASGI application serving the module at ``model_path``."""
    model = Model(model_path)
    signature = {name: {"inputs": [a.str_short() for a in fn.in_avals],
                        "outputs": [a.str_short() for a in fn.out_avals]}
                 for name, fn in model.module.functions.items()}

    async def predict(request: Request) -> JSONResponse:
        try:
            body = await _read_body(request)
            try:
                payload = json.loads(body)
            except (ValueError, UnicodeDecodeError) as e:
                raise BadRequest(400, f"malformed JSON: {e}") from None
            except RecursionError:  # nested deeper than Python's parser recurses
                raise BadRequest(400, "malformed JSON: nested too deeply") from None
            rows = _rows(payload, model.features)
        except BadRequest as e:
            return JSONResponse({"error": str(e)}, status_code=e.status)
        return JSONResponse(await run_in_threadpool(model, rows))

    async def describe(request: Request) -> JSONResponse:
        return JSONResponse({"model": os.path.basename(model_path), "functions": signature,
                             "batch": model.batch, "max_rows": MAX_ROWS})

    async def health(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        return JSONResponse({"error": error.detail}, status_code=error.status_code)

    return Starlette(routes=[Route("/v1/predict", predict, methods=["POST"]),
                             Route("/v1/model", describe), Route("/healthz", health)],
                     exception_handlers={HTTPException: http_error})


def __getattr__(name: str) -> Any:
    # `uvicorn app:app`: the module named by $MODEL, loaded on first access.
    if name == "app":
        global app
        app = create_app(os.environ.get("MODEL", "model.vmfb"))
        return app
    raise AttributeError(name)


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser(description="Serve an exported digits MLP over HTTP.")
    parser.add_argument("--model", default="model.vmfb")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()
    uvicorn.run(create_app(args.model), host=args.host, port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
