"""The local embedder's worker process: bulk passage embedding off the daemon.

Indexing thousands of chunks keeps every core busy for minutes. Doing that in
the daemon would make searches wait for CPU (BLAS threads spin) and for the
GIL (tokenisation is Python). So bulk embedding runs here, in a child process
at lower priority (``nice``) with its own BLAS thread budget, speaking
length-prefixed msgpack over stdin/stdout:

* the worker first writes `Ready` (or `Failed` if the model cannot load);
* then, for each `Job` it reads, it writes `Done` with the vectors as raw
  float32 bytes, or `Failed`.

The process exits when stdin closes, so it never outlives the daemon.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import IO

import msgspec

from omem_protocol import FrameBuffer, encode_frame
from openmemoryd.embed.engine import ENGINES


class Ready(msgspec.Struct, tag="ready", frozen=True):
    model: str
    dims: int


class Job(msgspec.Struct, tag="job", frozen=True):
    texts: list[str]
    is_query: bool = False


class Done(msgspec.Struct, tag="done", frozen=True):
    count: int
    dims: int
    vectors: bytes


class Failed(msgspec.Struct, tag="failed", frozen=True):
    error: str


WorkerReply = Ready | Done | Failed

MAX_FRAME = 256 * 1024 * 1024
_job_decoder: msgspec.msgpack.Decoder[Job] = msgspec.msgpack.Decoder(Job)
_encoder = msgspec.msgpack.Encoder()


def write_frame(out: IO[bytes], message: msgspec.Struct) -> None:
    out.write(encode_frame(_encoder.encode(message), MAX_FRAME))
    out.flush()


def read_frames(source: IO[bytes], buffer: FrameBuffer) -> list[bytes]:
    """Block until at least one frame arrives; [] means end of input."""
    while True:
        data = source.read1(1 << 16) if hasattr(source, "read1") else source.read(1 << 16)
        if not data:
            return []
        frames = buffer.feed(data)
        if frames:
            return frames


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="openmemoryd-embed-worker")
    parser.add_argument("--model", default="", help="a local model id; empty for the default")
    parser.add_argument("--weights", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("--engine", choices=ENGINES, default="auto")
    args = parser.parse_args(argv)

    out = sys.stdout.buffer
    if args.nice:
        os.nice(args.nice)
    try:
        from pathlib import Path

        from threadpoolctl import threadpool_limits

        from openmemoryd.embed.local.models import local_model

        spec = local_model(args.model)
        threadpool_limits(args.threads)
        model = spec.load(Path(args.weights), args.engine, args.threads)
    except Exception as exc:  # reported to the daemon, which shows it in status
        write_frame(out, Failed(error=f"cannot load the local model: {exc}"))
        return 1
    write_frame(out, Ready(model=spec.model_id, dims=spec.dims))

    buffer = FrameBuffer(MAX_FRAME)
    while frames := read_frames(sys.stdin.buffer, buffer):
        for frame in frames:
            try:
                job = _job_decoder.decode(frame)
                vectors = model.encode(job.texts, is_query=job.is_query)
                reply: WorkerReply = Done(
                    count=len(job.texts), dims=spec.dims, vectors=vectors.astype("<f4").tobytes()
                )
            except Exception as exc:  # one bad job must not kill the worker
                reply = Failed(error=f"{type(exc).__name__}: {exc}")
            write_frame(out, reply)
    return 0
