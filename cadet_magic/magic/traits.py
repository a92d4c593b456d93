"""The options of :class:`~cadet_magic.options.AskOptions` as configurable traits of the
``%%ask`` magic (``%config AskMagic.<option> = ...``): one trait per option, generated from the
option's declaration (its kind, default and help are written there once) and checked by the
option's own check. A secret (the API key) shows as a mask in ``%config AskMagic`` and reprs.
"""

from __future__ import annotations

from typing import Any

from traitlets import Bool, Dict, Float, Int, List, TraitError, TraitType, Unicode, validate
from traitlets.config import Configurable

from cadet_magic.errors import ConfigurationError
from cadet_magic.options import AskOptions, check_option


class Secret(str):
    """A string that does not show itself: ``%config AskMagic`` and reprs print a mask.

    Example:
        >>> key = Secret("sk-123")
        >>> repr(key), key == "sk-123"
        ("'***' (set)", True)
    """

    def __repr__(self) -> str:
        return "'***' (set)"


class SecretUnicode(Unicode):
    """A string trait whose value is kept as a :class:`Secret`."""

    def validate(self, obj: Any, value: Any) -> Any:
        value = super().validate(obj, value)
        return None if value is None else Secret(value)


def _trait(f: Any) -> TraitType:
    """The configurable trait of one :class:`AskOptions` field: its kind, default and help."""
    meta = f.metadata
    if meta["kind"] is dict:
        trait = Dict(
            default_value=f.default, allow_none=meta["nullable"], config=True, help=meta["help"]
        )
        trait.default_value = f.default  # None stays None (not an empty table)
        return trait
    if meta["kind"] is tuple:
        names = List(Unicode(), config=True, help=meta["help"])
        names.default_value = f.default  # a tuple, as the option holds it
        return names
    kinds = {int: Int, float: Float, bool: Bool, str: SecretUnicode if meta["secret"] else Unicode}
    return kinds[meta["kind"]](
        f.default, allow_none=meta["nullable"], config=True, help=meta["help"]
    )


def _check_trait(self: Any, proposal: Any) -> Any:
    """A trait's new value passes the option's own check (:func:`check_option`) or is refused
    with its one line; the trait keeps its value."""
    value, name = proposal["value"], proposal["trait"].name
    try:
        check_option(name, value)
    except ConfigurationError as e:
        message = str(e)
        raise TraitError(
            message if message.startswith("AskMagic.") else f"AskMagic.{message}"
        ) from None
    return value


#: One configurable trait per option, generated from :class:`AskOptions` (its defaults, help
#: and checks are written there once); ``%config AskMagic.<option> = ...`` sets them.
OptionTraits = type(
    "OptionTraits",
    (Configurable,),
    {
        **{f.name: _trait(f) for f in AskOptions.fields() if f.metadata["kind"] is not object},
        "_check_trait": validate(*AskOptions.names())(_check_trait),
        "__doc__": "The options of :class:`AskOptions` as configurable traits.",
    },
)
