"""How jobs reach a daemon: the driver protocol, its two implementations (gRPC, the image's
bench tool), the one prove-many flow with its hang guard, job-id schemes and deadlines."""
