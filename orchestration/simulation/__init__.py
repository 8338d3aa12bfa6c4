"""The deterministic simulator: the shipped drivers of every actor kind over a simulated network,
clock and storage, one seeded thread, no Ray (``simulation.Simulation``); seeded random fault
schedules over it (``random_faults``) and the ``raykafka sim`` command (``command``)."""
