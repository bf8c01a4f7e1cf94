//! The gateway's native data plane (see plane.rs); Python drives it through `DataPlane`.

pub mod hop;
pub mod io;
pub mod plane;
pub mod quota;
pub mod rewrite;
pub mod sasl;
pub mod splice;
pub mod stream;
pub mod tail;
pub mod testing;
pub mod tls;
pub mod wire;
