"""start_local_ray retries a failed Ray start-up, shuts each failed attempt down, and names the
last error when it gives up; ray.init is replaced by a fake, so no Ray starts."""
from __future__ import annotations

import os

import pytest

from actors.shared_records import RAY_INLINE_BYTES_ENV
from orchestration.admin import ray_runtime
from orchestration.admin.ray_runtime import LOCAL_RAY_INLINE_BYTES, RayStartError, start_local_ray


class FakeRay:
    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.inits: list[dict] = []
        self.shutdowns = 0
        self.initialized = False

    def init(self, **kwargs) -> None:
        self.inits.append(kwargs)
        if len(self.inits) <= self.failures:
            self.initialized = True  # a half-started Ray, as a failed ray.init can leave
            raise ConnectionError(f"GCS did not answer (attempt {len(self.inits)})")
        self.initialized = True

    def shutdown(self) -> None:
        self.shutdowns += 1
        self.initialized = False

    def is_initialized(self) -> bool:
        return self.initialized


@pytest.fixture
def fake_ray(monkeypatch):
    # start_local_ray sets Ray's settings in this process's environment: a copy, for this test only.
    monkeypatch.setattr(os, "environ", os.environ.copy())

    def install(failures: int) -> FakeRay:
        fake = FakeRay(failures)
        monkeypatch.setattr(ray_runtime, "ray", fake)
        return fake
    return install


def test_a_start_that_fails_is_shut_down_and_tried_again(fake_ray):
    fake = fake_ray(failures=2)
    start_local_ray(num_cpus=2, namespace="ns", first_wait_s=0)
    assert len(fake.inits) == 3 and fake.shutdowns == 2 and fake.initialized
    assert all(i["address"] == "local" and i["num_cpus"] == 2 and i["namespace"] == "ns" for i in fake.inits)
    assert fake.inits[0]["include_dashboard"] is False and fake.inits[0]["log_to_driver"] is False


def test_giving_up_names_the_last_error_and_leaves_no_ray_running(fake_ray):
    fake = fake_ray(failures=5)
    with pytest.raises(RayStartError, match=r"in 3 attempts; last error: ConnectionError\('GCS did not answer \(attempt 3\)'\)"):
        start_local_ray(num_cpus=2, namespace="ns", first_wait_s=0)
    assert len(fake.inits) == 3 and not fake.initialized


def test_a_first_start_that_works_is_not_repeated(fake_ray):
    fake = fake_ray(failures=0)
    start_local_ray(num_cpus=1, namespace="ns", first_wait_s=0, include_dashboard=True)
    assert len(fake.inits) == 1 and fake.shutdowns == 0 and fake.inits[0]["include_dashboard"] is True


def test_a_local_ray_frees_unreferenced_objects_every_100_ms_unless_the_caller_says_otherwise(fake_ray):
    fake = fake_ray(failures=0)
    start_local_ray(num_cpus=2, namespace="ns")
    assert fake.inits[0]["_system_config"]["free_objects_period_milliseconds"] == 100
    fake.shutdown()
    start_local_ray(num_cpus=2, namespace="ns", _system_config={"free_objects_period_milliseconds": 5, "x": 1})
    assert fake.inits[1]["_system_config"] == {"free_objects_period_milliseconds": 5, "x": 1}


def test_a_local_ray_hands_objects_of_up_to_2_mib_over_inline_unless_the_environment_says_otherwise(fake_ray):
    fake = fake_ray(failures=0)
    os.environ.pop(RAY_INLINE_BYTES_ENV, None)
    start_local_ray(num_cpus=2, namespace="ns")
    assert os.environ[RAY_INLINE_BYTES_ENV] == str(LOCAL_RAY_INLINE_BYTES) == "2097152"
    fake.shutdown()
    os.environ[RAY_INLINE_BYTES_ENV] = "102400"  # a user who wants Ray's default keeps it
    start_local_ray(num_cpus=2, namespace="ns")
    assert os.environ[RAY_INLINE_BYTES_ENV] == "102400" and len(fake.inits) == 2
