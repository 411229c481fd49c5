"""``open_store``: the :class:`~windowlib.state.objectstore.ObjectStore` for a location.

The one place that maps a :class:`~windowlib.state.uri.Uri` scheme to a store class (so the
store modules do not import each other).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from windowlib.core.errors import DefinitionError
from windowlib.state.objectstore import FileStore, ObjectStore
from windowlib.state.s3store import S3Store
from windowlib.state.uri import Uri

if TYPE_CHECKING:
    from windowlib.state.s3config import S3Settings

__all__ = ["delete_location", "open_store"]


def open_store(uri: str | Uri, settings: S3Settings | None = None) -> ObjectStore:
    """The store rooted at ``uri``: a :class:`Uri`, ``file:///abs``, ``s3://bucket/prefix``
    (``s3a://`` too) or a plain local path. ``settings`` apply to ``s3://`` only (default:
    :meth:`S3Settings.resolve`). Raises ``InputError(URI_INVALID)``."""
    loc = Uri.parse(uri, paths=True)
    if loc.scheme == "file":
        return FileStore(loc)
    return S3Store(loc.bucket, loc.key, settings=settings)


def delete_location(uri: str | Uri, settings: S3Settings | None = None) -> int:
    """Delete every object below ``uri`` (hidden ones too; ``delete_prefix`` of its parent
    store); returns how many. A bucket or the file-system root is refused
    (``InputError(ARGUMENT_INVALID)``)."""
    loc = Uri.parse(uri, paths=True)
    if loc.parent is None:
        raise DefinitionError(f"refusing to delete everything under {loc}: a bucket or "
                              "file-system root", code="ARGUMENT_INVALID")
    return open_store(loc.parent, settings).delete_prefix(f"{loc.name}/")
