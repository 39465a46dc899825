pub mod containerd;
pub mod standins;
