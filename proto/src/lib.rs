//! Generated gRPC services of Dragoman, the metadata that carries the acting
//! principal between processes, refusals carried in statuses, conversions
//! between the vocabulary and the wire, and the adapters that let a caller
//! hold a remote service behind the same trait as a local one, with the
//! trace context each call carries.
pub mod api_status;
pub mod documents;
pub mod principal;
pub mod remote;
pub mod remote_trace;
pub mod wire;

pub mod v1 {
    //! Code generated from `proto/dragoman.proto`.
    #![allow(clippy::all)]
    tonic::include_proto!("dragoman.v1");

    /// Encoded descriptor set, served by gRPC reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("dragoman_descriptor");
}

pub use v1::delivery_server::Delivery;
pub use v1::memory_server::Memory;
pub use v1::pipeline_server::Pipeline;
pub use v1::scheduler_server::Scheduler;
