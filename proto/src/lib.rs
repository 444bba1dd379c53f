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
    //! The documents of the spec and the messages of the internal services
    //! (`dragoman/v1/*.proto`); the internal services' modules are named
    //! here too, so a caller names one module.
    #![allow(clippy::all)]
    tonic::include_proto!("dragoman.v1");

    pub use crate::internal::v1::{
        delivery_client, delivery_server, memory_client, memory_server, pipeline_client,
        pipeline_server, scheduler_client, scheduler_server,
    };

    /// Encoded descriptor set of every file, served by the internal
    /// listener's reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("dragoman_descriptor");
}

pub mod internal {
    //! The services between the roles of one installation.
    pub mod v1 {
        //! Code generated from `dragoman/internal/v1/services.proto`.
        #![allow(clippy::all)]
        tonic::include_proto!("dragoman.internal.v1");
    }
}

pub mod api {
    //! The public services for internal teams, behind API tokens.
    pub mod v1 {
        //! Code generated from `dragoman/api/v1/*.proto`.
        #![allow(clippy::all)]
        tonic::include_proto!("dragoman.api.v1");

        /// Encoded descriptor set of the public services and the documents
        /// they use, served by the public listener's reflection.
        pub const FILE_DESCRIPTOR_SET: &[u8] =
            tonic::include_file_descriptor_set!("dragoman_public_descriptor");
    }
}

pub use v1::delivery_server::Delivery;
pub use v1::memory_server::Memory;
pub use v1::pipeline_server::Pipeline;
pub use v1::scheduler_server::Scheduler;
