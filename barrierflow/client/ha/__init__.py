"""Internal: driver high availability: leader election by a lease with an epoch in
``high-availability.storageDir``, fencing, durable checkpoint ids and the job registry. No
public names: it is configured by ``high-availability.*`` options (docs/public-api.md)."""
