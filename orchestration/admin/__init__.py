"""Running a raykafka cluster: the ``Cluster`` and its admin API, and the Ray underneath.

``cluster`` starts the controller and brokers on Ray and steers them (kill, restart, controlled
shutdown, topics, elections, descriptions), as Kafka's AdminClient and its scripts do;
``groups`` describes and lists consumer groups for it. ``ray_runtime`` starts a local Ray that
survives a busy machine, and ``ray_nodes`` a multi-node Ray on one machine, for node faults.
"""
