"""How one declaration of a call becomes a method of both clients.

Each client method is written once, in `_requests`, as a function that turns
friendly arguments into a `Call`: the method-table entry (which fixes the
result type) and its wire params. `blocking` and `awaitable` bind such a
function to `Client` and `AsyncClient`, which differ only in how they run a
`Call` (``_run``). The bound method keeps the function's name, docstring and
signature, for `help()`, IDEs and type checkers alike (the signature travels
through a ParamSpec).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Generic, ParamSpec, Protocol, TypeVar, overload

from omem_protocol import Method, Msg, Progress, RequestBody

P = ParamSpec("P")
R = TypeVar("R", bound=Msg)

ProgressCallback = Callable[[Progress], None]


class Call(Generic[R]):
    """One request ready to send: the method, its params, who wants its progress."""

    __slots__ = ("method", "on_progress", "params")

    def __init__(
        self,
        method: Method[Any, R],
        params: RequestBody,
        on_progress: ProgressCallback | None = None,
    ) -> None:
        self.method = method  # fixes the result type
        self.params = params
        self.on_progress = on_progress

    @property
    def result(self) -> type[R]:
        return self.method.result


class BlockingRunner(Protocol):
    def _run(self, call: Call[R]) -> R: ...


class AsyncRunner(Protocol):
    def _run(self, call: Call[R]) -> Awaitable[R]: ...


class blocking(Generic[P, R]):
    """A `Client` method from a call builder."""

    def __init__(self, build: Callable[P, Call[R]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self.__wrapped__ = build  # for inspect.signature and help()

    @overload
    def __get__(self, client: None, owner: type[Any]) -> blocking[P, R]: ...
    @overload
    def __get__(self, client: BlockingRunner, owner: type[Any]) -> Callable[P, R]: ...
    def __get__(
        self, client: BlockingRunner | None, owner: type[Any]
    ) -> blocking[P, R] | Callable[P, R]:
        if client is None:
            return self
        build = self.build

        def method(*args: P.args, **kwargs: P.kwargs) -> R:
            return client._run(build(*args, **kwargs))

        return functools.update_wrapper(method, build)


class awaitable(Generic[P, R]):
    """An `AsyncClient` method (a coroutine) from a call builder."""

    def __init__(self, build: Callable[P, Call[R]]) -> None:
        self.build = build
        self.__doc__ = build.__doc__
        self.__name__ = build.__name__
        self.__wrapped__ = build  # for inspect.signature and help()

    @overload
    def __get__(self, client: None, owner: type[Any]) -> awaitable[P, R]: ...
    @overload
    def __get__(
        self, client: AsyncRunner, owner: type[Any]
    ) -> Callable[P, Coroutine[Any, Any, R]]: ...
    def __get__(
        self, client: AsyncRunner | None, owner: type[Any]
    ) -> awaitable[P, R] | Callable[P, Coroutine[Any, Any, R]]:
        if client is None:
            return self
        build = self.build

        async def method(*args: P.args, **kwargs: P.kwargs) -> R:
            return await client._run(build(*args, **kwargs))

        return functools.update_wrapper(method, build)
