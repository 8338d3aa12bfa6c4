"""The drivers: one per actor kind, each owning a core and interpreting its effects through the
seams in ``seams`` (see actors/drivers/seams.py). No Ray, no asyncio: the Ray shells and the
simulator run these same drivers."""
