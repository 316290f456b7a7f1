"""Trying a draft before approval: the draft as a package folder, launched on the offline
provider, without anything reaching the library.

The folder is the draft version's own (``BEARPIT_HOME/scribe/drafts/<session>/v<N>``),
written once and never changed, so a realm launched from it keeps the files it ran.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from django.conf import settings

from realms.library import files as trees
from realms.models import Realm
from realms.packages import load_package
from realms.services.consent import elevated_grants
from realms.services.launch import LaunchOptions
from realms.services.providers import OFFLINE
from realms.services.queue import queue_package
from scribe.models import ScribeSession
from scribe.services import drafts
from scribe.services.errors import ScribeError


def _name(session: ScribeSession) -> str:
    return session.scenario or "draft"


def draft_folder(session: ScribeSession) -> Path:
    """The current draft version as a package folder (written the first time it is asked)."""
    version = drafts.current(session)
    if version is None:
        raise ScribeError("the draft holds no files yet: nothing to launch")
    root = (
        Path(settings.BEARPIT_HOME)
        / "scribe"
        / "drafts"
        / session.session_id
        / f"v{version.number}"
        / _name(session)
    )
    if not root.is_dir():
        root.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root.parent))
        try:
            trees.write_folder(drafts.as_tree(dict(version.files)), staging / "package")
            (staging / "package").rename(root)
        except OSError:
            if not root.is_dir():  # lost a race with another request writing the same one
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return root


def draft_elevated(session: ScribeSession) -> list[str]:
    """What the draft grants that a launch needs consent for (nothing if it does not load).

    Read from a throw-away copy: showing a page writes no draft folder.
    """
    files = drafts.current_files(session)
    if not files:
        return []
    with tempfile.TemporaryDirectory(prefix="bearpit-draft-") as tmp:
        root = trees.write_folder(drafts.as_tree(files), Path(tmp) / "package")
        result = load_package(root)
    return elevated_grants(result.project) if result.ok and result.project else []


def launch_draft(
    session: ScribeSession,
    *,
    realm_id: str | None = None,
    allow_elevated: bool = False,
    capacity: int,
) -> Realm:
    """Launch the current draft on the offline (scripted) provider; the library is untouched.

    Raises the queue's refusals (:class:`~realms.services.queue.QueueRefused`,
    :class:`~realms.services.launch.LaunchError`) or :class:`ScribeError`.
    """
    checked = drafts.check(drafts.current_files(session))
    if not checked["ok"]:
        raise ScribeError("the draft does not validate yet; fix its errors before launching it")
    options = LaunchOptions(realm_id=realm_id or None, provider=OFFLINE)
    return queue_package(
        draft_folder(session), options, capacity=capacity, allow_elevated=allow_elevated
    )
