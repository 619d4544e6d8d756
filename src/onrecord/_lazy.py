"""Package attributes imported on first use (PEP 562), shared by ``onrecord``,
``onrecord.runner`` and ``onrecord.dynamics``: a command that only reads records must not
pay for numpy-heavy or gymnasium-heavy modules it never touches, and the ``onrecord``
command imports the top package before its ``main()`` can turn a Ctrl-C into exit 130.

Kept free of imports (``typing`` included) because it runs at start-up."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping

__all__ = ["lazy_attributes"]


def lazy_attributes(
    package: str,
    namespace: dict[str, object],
    lazy: Mapping[str, str],
    public: Iterable[str],
    fallback: Callable[[str], object] | None = None,
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: a name in ``lazy`` (name ->
    defining module) is imported when first read and cached in ``namespace`` (the
    package's globals); any other name goes to ``fallback``, else AttributeError."""
    names = frozenset(public)

    def attribute(name: str) -> object:
        if name in lazy:
            from importlib import import_module

            value = getattr(import_module(lazy[name]), name)
        elif fallback is not None:
            value = fallback(name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # cached: looked up once per name
        return value

    def listing() -> list[str]:
        return sorted({*namespace, *names})

    return attribute, listing
