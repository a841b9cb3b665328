"""The doctor's reranker check: unless ``[search.rerank] provider = "none"``.

A reranker that cannot be built or cannot answer does not stop the daemon
(each search keeps its fused order and status says why, after the first
search); this check finds it before any search does, by scoring one English
probe passage (a service gets one request; the local model loads and runs
once). From outside (`reranker_check`) the reranker is built afresh with
retries off and the probe's own timeout; inside the daemon the probe goes
through the engine's own reranker (`doctor.inside`), so the model is not
loaded a second time.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Final

import msgspec

from omem_protocol import DoctorCheck
from openmemoryd.config import RerankSettings
from openmemoryd.doctor.report import fail, ok
from openmemoryd.errors import ConfigError
from openmemoryd.search.rerank import (
    HttpReranker,
    LocalReranker,
    Reranker,
    build_reranker,
    local_model_installed,
)
from openmemoryd.search.rerank.local import INSTALL_COMMAND

NAME: Final = "reranker"
PROBE_QUERY: Final = "Which tea does Wei like?"
PROBE_PASSAGE: Final = "Wei's favourite tea is oolong."
FIX: Final = "correct [search.rerank] as the message says (docs/configuration.md#reranking)"


def reranker_check(
    settings: RerankSettings, environ: Mapping[str, str], timeout_s: float
) -> DoctorCheck | None:
    """None when reranking is off; else whether the configured reranker answers."""
    if settings.provider == "none":
        return None
    if (off := default_without_model(settings)) is not None:
        return off
    quick = msgspec.structs.replace(
        settings, max_retries=0, timeout_s=min(settings.timeout_s, timeout_s)
    )
    try:
        reranker = build_reranker(quick, environ)
    except ConfigError as exc:
        return fail(NAME, str(exc), FIX)
    if not isinstance(reranker, LocalReranker | HttpReranker):  # the kinds with a blocking score
        return None
    begun = time.perf_counter()
    try:
        reranker.score(PROBE_QUERY, [PROBE_PASSAGE])
    except Exception as exc:  # whatever stops the probe is this check's finding
        return probe_verdict(reranker, begun, exc)
    finally:
        reranker.close()
    return probe_verdict(reranker, begun, None)


def default_without_model(settings: RerankSettings) -> DoctorCheck | None:
    """The check's line for the default (``auto``) where the local model is
    not installed: no failure, searches keep the fused order."""
    if settings.provider == "auto" and not local_model_installed():
        return ok(NAME, f"off: the local model is not installed (`{INSTALL_COMMAND}`)")
    return None


def probe_verdict(reranker: Reranker, begun: float, error: Exception | None) -> DoctorCheck:
    """The verdict on one probe started at *begun* (perf_counter), failed with *error*."""
    what = f"{reranker.name} {reranker.model}".strip()
    if error is not None:
        return fail(NAME, f"{what} could not score a probe: {error}", FIX)
    took_ms = (time.perf_counter() - begun) * 1000
    return ok(NAME, f"{what} scored a probe in {took_ms:.0f} ms")
