//! What the black-box tests share: run the built binary once (`cli`), a
//! headless Chromium over WebDriver (`browser`), a
//! daemon under test (`daemon`), a real etcd server (`etcd`), a real Kubernetes API server
//! from `KUBEBUILDER_ASSETS` (`envtest`), a small HTTP
//! client (`http`), a fake Kubernetes API server (`kube_fake`) and the
//! daemon in Kubernetes mode against it (`kube_daemon`), real receivers
//! for reports (`receivers`, with `smtp_sink.py`), a test-time certificate
//! authority (`certs`), the members of a cluster under test (`cluster`),
//! the original daemon (`original`), pooled jobs and pool stores
//! (`pools`) and the runner of the Python offline
//! checks (`scripts`).
//!
//! Every test binary declares `mod support;` and uses what it needs, so
//! each binary leaves some helpers unused.

#![allow(dead_code)]

pub mod browser;
pub mod certs;
pub mod cli;
pub mod cluster;
pub mod daemon;
pub mod envtest;
pub mod etcd;
pub mod http;
pub mod kube_daemon;
pub mod kube_fake;
pub mod original;
pub mod pools;
pub mod receivers;
pub mod scripts;
