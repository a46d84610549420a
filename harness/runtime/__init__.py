"""Where a daemon runs and how to reach it: the one container runner, its watchdog, the daemon
launcher, the gRPC client, the daemon's own status, GPUs and the independent verifier."""
