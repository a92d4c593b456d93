"""How the schema is written into the prompt: the forms, what of the data they show, and the
detail levels the linker packs tables at (stdlib only)."""

from __future__ import annotations

from dataclasses import dataclass

#: Detail levels for :func:`render_table`: everything; no samples and comments;
#: column names only (plus keys).
FULL, TYPED, NAMES = 0, 1, 2

#: The forms a schema can be written in (:class:`Representation`).
FORMS = ("compact", "create", "engine")
#: What of the data it shows: values per column, rows per table, both, or none.
SAMPLES = ("columns", "rows", "both", "none")


@dataclass(frozen=True)
class Representation:
    """How the schema is written into the prompt: an internal choice, made by measurement
    (docs/benchmarks-history.md, "The first prompt, chosen by measurement"), not a user's option.

    Attributes:
        form: ``compact`` (one line per table: ``name(col TYPE PK e.g. 'a'|'b', ...)``, foreign
            keys as ``FK`` lines), ``create`` (``CREATE TABLE`` statements rebuilt from the
            catalog, the same for every engine, :mod:`cadet_magic.schema.render_create`) or
            ``engine`` (the engine's own statement where the catalog read one, else rebuilt).
        samples: ``columns`` (a few values of each low-cardinality text column), ``rows`` (a
            few rows per table, read with the schema), ``both`` or ``none``.
        keys: show foreign keys.
        comments: show the catalog's comments.

    Example:
        >>> Representation("create", "rows").name
        'create-rows'
        >>> Representation().name, Representation("create", keys=False).name
        ('compact-columns', 'create-columns-nokeys')
    """

    form: str = "compact"
    samples: str = "columns"
    keys: bool = True
    comments: bool = True

    def __post_init__(self) -> None:
        if self.form not in FORMS or self.samples not in SAMPLES:
            raise ValueError(f"unknown representation {self.form!r}, {self.samples!r}")

    @classmethod
    def parse(cls, name: str) -> Representation:
        """The representation of a :attr:`name`.

        Example:
            >>> Representation.parse("create-rows-nokeys")
            Representation(form='create', samples='rows', keys=False, comments=True)
        """
        form, samples, *rest = name.split("-")
        if set(rest) - {"nokeys", "nocomments"}:
            raise ValueError(f"unknown representation {name!r}")
        return cls(form, samples, "nokeys" not in rest, "nocomments" not in rest)

    @property
    def name(self) -> str:
        """A short name: ``form-samples``, with ``-nokeys`` / ``-nocomments`` when left out."""
        parts = [self.form, self.samples]
        parts += [] if self.keys else ["nokeys"]
        parts += [] if self.comments else ["nocomments"]
        return "-".join(parts)


#: The product's representation before the first prompt was chosen by measurement.
COMPACT = Representation()
