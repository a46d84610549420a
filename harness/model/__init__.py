"""The typed records every step hands the next: profiles, workloads, jobs, runs, oracle records,
the differential result (msgspec structs, one serializer)."""
