"""Domain environments built on onrecord: ``ledger`` (invoice posting fixture) and
``remittance`` (clinic-billing remittance posting on the environment kit)."""

__all__: list[str] = []
