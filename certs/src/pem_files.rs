//! Turning a PEM certificate chain and a PEM private key into a rustls [`CertifiedKey`].

use std::path::Path;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use rustls::{Error as TlsError, InconsistentKeys};

use crate::error::{CertsError, Result};

/// Reads a whole file, naming it in the error.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| CertsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

/// Parses `cert_pem` (leaf first, then any intermediates) and `key_pem`, and checks
/// that the key belongs to the leaf.
///
/// The paths are only used to say which file is at fault.
pub(crate) fn certified_key(
    cert_path: &Path,
    cert_pem: &[u8],
    key_path: &Path,
    key_pem: &[u8],
    provider: &CryptoProvider,
) -> Result<CertifiedKey> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| CertsError::Pem {
            path: cert_path.to_path_buf(),
            source,
        })?;
    if chain.is_empty() {
        return Err(CertsError::NoCertificate {
            path: cert_path.to_path_buf(),
        });
    }

    let key_der = PrivateKeyDer::from_pem_slice(key_pem).map_err(|error| match error {
        pem::Error::NoItemsFound => CertsError::NoPrivateKey {
            path: key_path.to_path_buf(),
        },
        source => CertsError::Pem {
            path: key_path.to_path_buf(),
            source,
        },
    })?;
    let signing_key = provider
        .key_provider
        .load_private_key(key_der)
        .map_err(|source| CertsError::UnsupportedKey {
            path: key_path.to_path_buf(),
            source,
        })?;

    let certified = CertifiedKey::new(chain, signing_key);
    match certified.keys_match() {
        // A key type that cannot report its public key leaves the check to the
        // handshake, the same leniency rustls' own `CertifiedKey::from_der` has.
        Ok(()) | Err(TlsError::InconsistentKeys(InconsistentKeys::Unknown)) => Ok(certified),
        Err(TlsError::InconsistentKeys(_)) => Err(CertsError::KeyMismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
        }),
        Err(source) => Err(CertsError::InvalidCertificate {
            path: cert_path.to_path_buf(),
            source,
        }),
    }
}
