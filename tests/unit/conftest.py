"""Fixtures the pure-core tests share: ``storage``, each test run once over the in-memory storage
and once over files in a temp directory (actors/file_storage.py)."""
from __future__ import annotations

import pytest

from actors.core.log.storage import InMemoryStorage
from actors.file_storage import FileStorage


@pytest.fixture(params=["memory", "files"])
def storage(request, tmp_path):
    if request.param == "memory":
        yield InMemoryStorage()
        return
    file_storage = FileStorage(str(tmp_path / "logs"))
    yield file_storage
    file_storage.close()
