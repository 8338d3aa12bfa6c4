"""The ``raykafka`` subcommands that steer a running cluster, one module per family, each with
``--json`` for scripts: ``cluster`` (start, status, stop), ``topics``, ``produce`` and ``consume``
(``data``), ``groups``, and ``kill`` / ``elect-leaders`` (``operations``). ``common`` holds what
they share: the target cluster's options (``--namespace``, ``--address``) and the output."""
