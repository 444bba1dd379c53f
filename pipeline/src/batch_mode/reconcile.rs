//! The owner's reconcile of a batch whose acceptance could not be verified
//! (`unknown`): the remote batch they name is checked with the provider and
//! adopted by the job.
