//! Known-answer tests shared by every provider.
//!
//! Each `check_*` function is generic over [`CryptoProvider`] and is run for the RustCrypto
//! provider (whatever features this build has) and, with feature `std`, for `fast::Ring`, by
//! the `provider_tests!` macro at the bottom. Every vector names its source; all of them were
//! also cross-checked against an independent implementation (Python `cryptography`/`hashlib`)
//! when this file was written.
//!
//! Tests under `#[cfg(not(feature = ...))]` check that a build without an algorithm reports
//! `Error::Unsupported`; they run in the minimal configuration
//! (`--no-default-features --features rustcrypto`).

// The test helpers are shared by configurations that use different subsets of them.
#![allow(dead_code, unused_imports)]

use hex_literal::hex;
use mote_crypto::{
    hkdf, AeadAlgorithm, AeadKey as _, CryptoProvider, CryptoRng, Error, Hash as _, HashAlgorithm,
    HeaderProtectionKey as _, Hmac as _, KeyExchange as _, NamedGroup, SignatureScheme,
    SigningKey as _, MAX_SIGNATURE_LEN, TAG_LEN,
};

// ---------------------------------------------------------------------------------------------
// Test RNGs
// ---------------------------------------------------------------------------------------------

/// Returns the given byte strings, one per `fill` call (lengths must match), then fails.
/// Lets a provider that draws its keys from the caller's RNG be fed an RFC private key.
struct FixedRng<'a> {
    outputs: &'a [&'a [u8]],
}

impl CryptoRng for FixedRng<'_> {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        let (first, rest) = self.outputs.split_first().ok_or(Error::Rng)?;
        if first.len() != dest.len() {
            return Err(Error::Rng);
        }
        dest.copy_from_slice(first);
        self.outputs = rest;
        Ok(())
    }
}

/// A deterministic, non-cryptographic RNG (SplitMix64) for tests that just need distinct
/// keys.
struct TestRng(u64);

impl CryptoRng for TestRng {
    fn fill(&mut self, dest: &mut [u8]) -> Result<(), Error> {
        for chunk in dest.chunks_mut(8) {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
        }
        Ok(())
    }
}

/// An RNG that always fails, to check the error propagates.
struct FailingRng;

impl CryptoRng for FailingRng {
    fn fill(&mut self, _: &mut [u8]) -> Result<(), Error> {
        Err(Error::Rng)
    }
}

// ---------------------------------------------------------------------------------------------
// Hashes
// ---------------------------------------------------------------------------------------------

fn check_hash<P: CryptoProvider>(p: &P, alg: HashAlgorithm, msg: &[u8], expected: &[u8]) {
    let mut h = p.hash(alg).unwrap();
    assert_eq!(h.algorithm(), alg);
    h.update(msg);
    assert_eq!(h.finish().as_ref(), expected, "{alg:?} one-shot");

    // Byte-at-a-time, with a snapshot half way that must not disturb the running hash.
    let mut h = p.hash(alg).unwrap();
    let (a, b) = msg.split_at(msg.len() / 2);
    for byte in a {
        h.update(core::slice::from_ref(byte));
    }
    let mid = h.snapshot();
    let mut fresh = p.hash(alg).unwrap();
    fresh.update(a);
    assert_eq!(mid, fresh.finish(), "{alg:?} snapshot");
    // A clone forks the transcript.
    let fork = h.clone();
    h.update(b);
    assert_eq!(h.finish().as_ref(), expected, "{alg:?} incremental");
    let mut fork = fork;
    fork.update(b);
    assert_eq!(fork.finish().as_ref(), expected, "{alg:?} fork");
}

/// FIPS 180-2 Appendix B.1 and B.2 (SHA-256, "abc" and the two-block message).
fn check_sha256<P: CryptoProvider>(p: &P) {
    check_hash(
        p,
        HashAlgorithm::Sha256,
        b"abc",
        &hex!("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
    );
    check_hash(
        p,
        HashAlgorithm::Sha256,
        b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
        &hex!("248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    );
    // SHA-256 of the empty string (FIPS 180-4 example values, NIST CSRC).
    check_hash(
        p,
        HashAlgorithm::Sha256,
        b"",
        &hex!("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
    );
}

/// FIPS 180-2 Appendix D.1 and D.2 (SHA-384, "abc" and the two-block message).
fn check_sha384<P: CryptoProvider>(p: &P) {
    check_hash(
        p,
        HashAlgorithm::Sha384,
        b"abc",
        &hex!(
            "cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed"
            "8086072ba1e7cc2358baeca134c825a7"
        ),
    );
    check_hash(
        p,
        HashAlgorithm::Sha384,
        b"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno\
          ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
        &hex!(
            "09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712"
            "fcc7c71a557e2db966c3e9fa91746039"
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// HMAC
// ---------------------------------------------------------------------------------------------

fn check_hmac<P: CryptoProvider>(p: &P, alg: HashAlgorithm, key: &[u8], msg: &[u8], tag: &[u8]) {
    let mut m = p.hmac(alg, key).unwrap();
    m.update(msg);
    assert_eq!(m.finish().as_ref(), tag, "{alg:?}");
    // Split updates give the same tag.
    let mut m = p.hmac(alg, key).unwrap();
    let (a, b) = msg.split_at(msg.len() / 3);
    m.update(a);
    m.update(&[]);
    m.update(b);
    assert_eq!(m.finish().as_ref(), tag, "{alg:?} split");
}

/// RFC 4231 §4.2 (test case 1), §4.3 (test case 2), §4.7 (test case 6, key longer than a
/// block), HMAC-SHA-256 results.
fn check_hmac_sha256<P: CryptoProvider>(p: &P) {
    let alg = HashAlgorithm::Sha256;
    check_hmac(
        p,
        alg,
        &[0x0b; 20],
        b"Hi There",
        &hex!("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"),
    );
    check_hmac(
        p,
        alg,
        b"Jefe",
        b"what do ya want for nothing?",
        &hex!("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"),
    );
    check_hmac(
        p,
        alg,
        &[0xaa; 131],
        b"Test Using Larger Than Block-Size Key - Hash Key First",
        &hex!("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"),
    );
}

/// RFC 4231 test cases 1, 2 and 6, HMAC-SHA-384 results.
fn check_hmac_sha384<P: CryptoProvider>(p: &P) {
    let alg = HashAlgorithm::Sha384;
    check_hmac(
        p,
        alg,
        &[0x0b; 20],
        b"Hi There",
        &hex!(
            "afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59c"
            "faea9ea9076ede7f4af152e8b2fa9cb6"
        ),
    );
    check_hmac(
        p,
        alg,
        b"Jefe",
        b"what do ya want for nothing?",
        &hex!(
            "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
            "8e2240ca5e69e2c78b3239ecfab21649"
        ),
    );
    check_hmac(
        p,
        alg,
        &[0xaa; 131],
        b"Test Using Larger Than Block-Size Key - Hash Key First",
        &hex!(
            "4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c6"
            "0c2ef6ab4030fe8296248df163f44952"
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// HKDF
// ---------------------------------------------------------------------------------------------

fn check_hkdf_case<P: CryptoProvider>(
    p: &P,
    salt: &[u8],
    ikm: &[u8],
    info: &[u8],
    prk: &[u8],
    okm: &[u8],
) {
    let alg = HashAlgorithm::Sha256;
    let got_prk = hkdf::extract(p, alg, salt, ikm).unwrap();
    assert_eq!(got_prk.as_ref(), prk);
    let mut out = vec![0u8; okm.len()];
    hkdf::expand(p, alg, got_prk.as_ref(), &[info], &mut out).unwrap();
    assert_eq!(out, okm);
    // `info` given in parts is concatenated.
    let (i1, i2) = info.split_at(info.len() / 2);
    let mut out = vec![0u8; okm.len()];
    hkdf::expand(p, alg, got_prk.as_ref(), &[i1, &[], i2], &mut out).unwrap();
    assert_eq!(out, okm);
}

/// RFC 5869 Appendix A.1, A.2 and A.3 (HKDF-SHA-256).
fn check_hkdf<P: CryptoProvider>(p: &P) {
    // A.1: basic test case.
    check_hkdf_case(
        p,
        &hex!("000102030405060708090a0b0c"),
        &[0x0b; 22],
        &hex!("f0f1f2f3f4f5f6f7f8f9"),
        &hex!("077709362c2e32df0ddc3f0dc47bba6390b6c73bb50f9c3122ec844ad7c2b3e5"),
        &hex!(
            "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
            "34007208d5b887185865"
        ),
    );
    // A.2: longer inputs and outputs.
    let ikm: Vec<u8> = (0x00..=0x4f).collect();
    let salt: Vec<u8> = (0x60..=0xaf).collect();
    let info: Vec<u8> = (0xb0..=0xff).collect();
    check_hkdf_case(
        p,
        &salt,
        &ikm,
        &info,
        &hex!("06a6b88c5853361a06104c9ceb35b45cef760014904671014a193f40c15fc244"),
        &hex!(
            "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c"
            "59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71"
            "cc30c58179ec3e87c14c01d5c1f3434f1d87"
        ),
    );
    // A.3: zero-length salt and info.
    check_hkdf_case(
        p,
        &[],
        &[0x0b; 22],
        &[],
        &hex!("19ef24a32c717b167f33a91d6f648bdf96596776afdb6377ac434c1c293ccb04"),
        &hex!(
            "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
            "9d201395faa4b61a96c8"
        ),
    );
    // RFC 5869 §2.3: L <= 255 * HashLen.
    let mut too_long = vec![0u8; 255 * 32 + 1];
    assert_eq!(
        hkdf::expand(p, HashAlgorithm::Sha256, &[0; 32], &[], &mut too_long),
        Err(Error::BadLength)
    );
    let mut max = vec![0u8; 255 * 32];
    hkdf::expand(p, HashAlgorithm::Sha256, &[0; 32], &[], &mut max).unwrap();
}

/// HKDF-Expand-Label (RFC 8446 §7.1) against RFC 9001 Appendix A.1 (QUIC v1 Initial secrets,
/// client DCID 0x8394c8f03e515708), RFC 9001 A.5 (ChaCha20 short-header packet keys) and
/// RFC 8448 §3 (the "derived" secret of the simple 1-RTT handshake).
fn check_expand_label<P: CryptoProvider>(p: &P) {
    let alg = HashAlgorithm::Sha256;
    // RFC 9001 §5.2 initial_salt; A.1.
    let initial_salt = hex!("38762cf7f55934b34d179ae6a4c80cadccbb7f0a");
    let initial_secret = hkdf::extract(p, alg, &initial_salt, &hex!("8394c8f03e515708")).unwrap();
    assert_eq!(
        initial_secret.as_ref(),
        hex!("7db5df06e7a69e432496adedb00851923595221596ae2ae9fb8115c1e9ed0a44")
    );
    let client =
        hkdf::expand_label_secret(p, alg, initial_secret.as_ref(), b"client in", b"").unwrap();
    assert_eq!(
        client.as_ref(),
        hex!("c00cf151ca5be075ed0ebfb5c80323c42d6b7db67881289af4008f1f6c357aea")
    );
    let server =
        hkdf::expand_label_secret(p, alg, initial_secret.as_ref(), b"server in", b"").unwrap();
    assert_eq!(
        server.as_ref(),
        hex!("3c199828fd139efd216c155ad844cc81fb82fa8d7446fa7d78be803acdda951b")
    );
    let mut key = [0u8; 16];
    hkdf::expand_label(p, alg, client.as_ref(), b"quic key", b"", &mut key).unwrap();
    assert_eq!(key, hex!("1f369613dd76d5467730efcbe3b1a22d"));
    let mut iv = [0u8; 12];
    hkdf::expand_label(p, alg, client.as_ref(), b"quic iv", b"", &mut iv).unwrap();
    assert_eq!(iv, hex!("fa044b2f42a3fd3b46fb255c"));
    let mut hp = [0u8; 16];
    hkdf::expand_label(p, alg, client.as_ref(), b"quic hp", b"", &mut hp).unwrap();
    assert_eq!(hp, hex!("9f50449e04a0e810283a1e9933adedd2"));

    // RFC 9001 A.5: 32-byte keys and the key update label.
    let secret = hex!("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
    let mut key = [0u8; 32];
    hkdf::expand_label(p, alg, &secret, b"quic key", b"", &mut key).unwrap();
    assert_eq!(key, hex!("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8"));
    let ku = hkdf::expand_label_secret(p, alg, &secret, b"quic ku", b"").unwrap();
    assert_eq!(
        ku.as_ref(),
        hex!("1223504755036d556342ee9361d253421a826c9ecdf3c7148684b36b714881f9")
    );

    // RFC 8448 §3: early secret = HKDF-Extract(0, 0^32), then
    // Derive-Secret(early, "derived", "") = Expand-Label(., "derived", SHA-256(""), 32).
    let early = hkdf::extract(p, alg, &[], &[0; 32]).unwrap();
    assert_eq!(
        early.as_ref(),
        hex!("33ad0a1c607ec03b09e6cd9893680ce210adf300aa1f2660e1b22e10f170f92a")
    );
    let empty_hash = p.hash(alg).unwrap().finish();
    let derived =
        hkdf::expand_label_secret(p, alg, early.as_ref(), b"derived", empty_hash.as_ref()).unwrap();
    assert_eq!(
        derived.as_ref(),
        hex!("6f2615a108c702c5678f54fc9dbab69716c076189c48250cebeac3576c3611ba")
    );

    // HkdfLabel limits: label <= 255 - 6 bytes, context <= 255 bytes.
    let mut out = [0u8; 32];
    assert_eq!(
        hkdf::expand_label(p, alg, &secret, &[b'x'; 250], b"", &mut out),
        Err(Error::BadLength)
    );
    assert_eq!(
        hkdf::expand_label(p, alg, &secret, b"x", &[0; 256], &mut out),
        Err(Error::BadLength)
    );
    hkdf::expand_label(p, alg, &secret, &[b'x'; 249], &[0; 255], &mut out).unwrap();
}

// ---------------------------------------------------------------------------------------------
// AEAD
// ---------------------------------------------------------------------------------------------

struct AeadVector<'a> {
    alg: AeadAlgorithm,
    key: &'a [u8],
    nonce: [u8; 12],
    aad: &'a [u8],
    plaintext: &'a [u8],
    ciphertext: &'a [u8],
    tag: [u8; TAG_LEN],
}

fn check_aead_vector<P: CryptoProvider>(p: &P, v: &AeadVector<'_>) {
    let key = p.aead_key(v.alg, v.key).unwrap();
    assert_eq!(key.algorithm(), v.alg);

    let mut buf = v.plaintext.to_vec();
    let tag = key.seal_in_place(&v.nonce, v.aad, &mut buf).unwrap();
    assert_eq!(buf, v.ciphertext, "{:?} ciphertext", v.alg);
    assert_eq!(tag, v.tag, "{:?} tag", v.alg);

    key.open_in_place(&v.nonce, v.aad, &mut buf, &tag).unwrap();
    assert_eq!(buf, v.plaintext, "{:?} open", v.alg);

    // Any altered bit fails authentication.
    if !v.ciphertext.is_empty() {
        let mut bad = v.ciphertext.to_vec();
        let last = bad.len() - 1;
        bad[last] ^= 0x01;
        assert_eq!(
            key.open_in_place(&v.nonce, v.aad, &mut bad, &v.tag),
            Err(Error::DecryptFailed),
            "{:?} flipped ciphertext",
            v.alg
        );
    }
    let mut bad_tag = v.tag;
    bad_tag[0] ^= 0x80;
    let mut ct = v.ciphertext.to_vec();
    assert_eq!(
        key.open_in_place(&v.nonce, v.aad, &mut ct, &bad_tag),
        Err(Error::DecryptFailed),
        "{:?} flipped tag",
        v.alg
    );
    let mut bad_aad = v.aad.to_vec();
    match bad_aad.first_mut() {
        Some(b) => *b ^= 0x01,
        None => bad_aad.push(0),
    }
    let mut ct = v.ciphertext.to_vec();
    assert_eq!(
        key.open_in_place(&v.nonce, &bad_aad, &mut ct, &v.tag),
        Err(Error::DecryptFailed),
        "{:?} flipped AAD",
        v.alg
    );
    let mut bad_nonce = v.nonce;
    bad_nonce[11] ^= 0x01;
    let mut ct = v.ciphertext.to_vec();
    assert_eq!(
        key.open_in_place(&bad_nonce, v.aad, &mut ct, &v.tag),
        Err(Error::DecryptFailed),
        "{:?} other nonce",
        v.alg
    );
    // Truncated ciphertext.
    if !v.ciphertext.is_empty() {
        let mut short = v.ciphertext[..v.ciphertext.len() - 1].to_vec();
        assert_eq!(
            key.open_in_place(&v.nonce, v.aad, &mut short, &v.tag),
            Err(Error::DecryptFailed)
        );
    }

    // Wrong key lengths are errors, not panics.
    for len in [0, v.key.len() - 1, v.key.len() + 1, 64] {
        assert_eq!(
            p.aead_key(v.alg, &vec![0u8; len]).err(),
            Some(Error::BadLength),
            "{:?} key length {len}",
            v.alg
        );
    }

    // A QUIC-sized round trip.
    let mut packet = [0x5au8; 1200];
    let tag = key.seal_in_place(&v.nonce, b"header", &mut packet).unwrap();
    assert_ne!(packet, [0x5au8; 1200]);
    key.open_in_place(&v.nonce, b"header", &mut packet, &tag).unwrap();
    assert_eq!(packet, [0x5au8; 1200]);
    // An empty payload still authenticates the AAD.
    let tag = key.seal_in_place(&v.nonce, b"header", &mut []).unwrap();
    key.open_in_place(&v.nonce, b"header", &mut [], &tag).unwrap();
    assert_eq!(key.open_in_place(&v.nonce, b"headex", &mut [], &tag), Err(Error::DecryptFailed));
}

/// The GCM plaintext of McGrew & Viega, "The Galois/Counter Mode of Operation (GCM)",
/// test cases 3/4 and 15/16 (test cases 4 and 16 drop the last 4 bytes).
const GCM_P: [u8; 64] = hex!(
    "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
    "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
);
const GCM_A: [u8; 20] = hex!("feedfacedeadbeeffeedfacedeadbeefabaddad2");
const GCM_IV: [u8; 12] = hex!("cafebabefacedbaddecaf888");
const GCM_K128: [u8; 16] = hex!("feffe9928665731c6d6a8f9467308308");

/// McGrew–Viega GCM test cases 3 and 4 (AES-128).
fn check_aes128_gcm<P: CryptoProvider>(p: &P) {
    let c = hex!(
        "42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e"
        "21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985"
    );
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::Aes128Gcm,
            key: &GCM_K128,
            nonce: GCM_IV,
            aad: &[],
            plaintext: &GCM_P,
            ciphertext: &c,
            tag: hex!("4d5c2af327cd64a62cf35abd2ba6fab4"),
        },
    );
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::Aes128Gcm,
            key: &GCM_K128,
            nonce: GCM_IV,
            aad: &GCM_A,
            plaintext: &GCM_P[..60],
            ciphertext: &c[..60],
            tag: hex!("5bc94fbc3221a5db94fae95ae7121a47"),
        },
    );
}

/// McGrew–Viega GCM test cases 15 and 16 (AES-256).
fn check_aes256_gcm<P: CryptoProvider>(p: &P) {
    let key = hex!("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308");
    let c = hex!(
        "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
        "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad"
    );
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::Aes256Gcm,
            key: &key,
            nonce: GCM_IV,
            aad: &[],
            plaintext: &GCM_P,
            ciphertext: &c,
            tag: hex!("b094dac5d93471bdec1a502270e3cc6c"),
        },
    );
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::Aes256Gcm,
            key: &key,
            nonce: GCM_IV,
            aad: &GCM_A,
            plaintext: &GCM_P[..60],
            ciphertext: &c[..60],
            tag: hex!("76fc6ece0f4e1768cddf8853bb2d551b"),
        },
    );
}

/// RFC 8439 §2.8.2 (AEAD_CHACHA20_POLY1305 example) and RFC 9001 A.5 (the ChaCha20-Poly1305
/// short-header packet: payload 0x01, packet number 654360564).
fn check_chacha20_poly1305<P: CryptoProvider>(p: &P) {
    let key: Vec<u8> = (0x80..=0x9f).collect();
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::ChaCha20Poly1305,
            key: &key,
            nonce: hex!("070000004041424344454647"),
            aad: &hex!("50515253c0c1c2c3c4c5c6c7"),
            plaintext: b"Ladies and Gentlemen of the class of '99: If I could offer you only \
                         one tip for the future, sunscreen would be it.",
            ciphertext: &hex!(
                "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
                "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
                "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
                "3ff4def08e4b7a9de576d26586cec64b6116"
            ),
            tag: hex!("1ae10b594f09e26a7e902ecbd0600691"),
        },
    );
    // RFC 9001 A.5: nonce = iv XOR packet number; AAD = the unprotected header 4200bff4.
    check_aead_vector(
        p,
        &AeadVector {
            alg: AeadAlgorithm::ChaCha20Poly1305,
            key: &hex!("c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8"),
            nonce: hex!("e0459b3474bdd0e46d417eb0"),
            aad: &hex!("4200bff4"),
            plaintext: &[0x01],
            ciphertext: &[0x65],
            tag: hex!("5e5cd55c41f69080575d7999c25a5bfb"),
        },
    );
}

// ---------------------------------------------------------------------------------------------
// Header protection
// ---------------------------------------------------------------------------------------------

fn check_mask<P: CryptoProvider>(
    p: &P,
    alg: AeadAlgorithm,
    key: &[u8],
    sample: [u8; 16],
    mask: [u8; 5],
) {
    let k = p.header_key(alg, key).unwrap();
    assert_eq!(k.algorithm(), alg);
    assert_eq!(k.mask(&sample).unwrap(), mask, "{alg:?}");
    for len in [0, key.len() - 1, key.len() + 1] {
        assert_eq!(
            p.header_key(alg, &vec![0u8; len]).err(),
            Some(Error::BadLength),
            "{alg:?} key length {len}"
        );
    }
}

/// RFC 9001 A.2 (client Initial) and A.3 (server Initial); FIPS 197 Appendix C.1, since the
/// AES header-protection mask is the first 5 bytes of AES-ECB(hp_key, sample) (RFC 9001 §5.4.3).
fn check_hp_aes128<P: CryptoProvider>(p: &P) {
    let alg = AeadAlgorithm::Aes128Gcm;
    check_mask(
        p,
        alg,
        &hex!("9f50449e04a0e810283a1e9933adedd2"),
        hex!("d1b1c98dd7689fb8ec11d242b123dc9b"),
        hex!("437b9aec36"),
    );
    check_mask(
        p,
        alg,
        &hex!("c206b8d9b9f0f37644430b490eeaa314"),
        hex!("2cd0991cd25b0aac406a5816b6394100"),
        hex!("2ec0d8356a"),
    );
    check_mask(
        p,
        alg,
        &hex!("000102030405060708090a0b0c0d0e0f"),
        hex!("00112233445566778899aabbccddeeff"),
        hex!("69c4e0d86a"),
    );
}

/// FIPS 197 Appendix C.3 (AES-256): RFC 9001 has no AES-256 example.
fn check_hp_aes256<P: CryptoProvider>(p: &P) {
    check_mask(
        p,
        AeadAlgorithm::Aes256Gcm,
        &hex!("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"),
        hex!("00112233445566778899aabbccddeeff"),
        hex!("8ea2b7ca51"),
    );
}

/// RFC 9001 A.5 (ChaCha20 header protection, §5.4.4).
fn check_hp_chacha20<P: CryptoProvider>(p: &P) {
    check_mask(
        p,
        AeadAlgorithm::ChaCha20Poly1305,
        &hex!("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"),
        hex!("5e5cd55c41f69080575d7999c25a5bfb"),
        hex!("aefefe7d03"),
    );
    // The sample's first four bytes are a peer-chosen block counter; 0xffffffff is legal
    // (RFC 9001 §5.4.4 uses one block) and once panicked the RustCrypto stream wrapper,
    // found by the packet_parse fuzz target. Expected mask from Python `cryptography`.
    check_mask(
        p,
        AeadAlgorithm::ChaCha20Poly1305,
        &hex!("25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4"),
        hex!("ffffffff41f69080575d7999c25a5bfb"),
        hex!("4db433a80a"),
    );
}

// ---------------------------------------------------------------------------------------------
// Key exchange
// ---------------------------------------------------------------------------------------------

/// RFC 7748 §6.1.
const X25519_ALICE_PRIVATE: [u8; 32] =
    hex!("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
const X25519_ALICE_PUBLIC: [u8; 32] =
    hex!("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
const X25519_BOB_PRIVATE: [u8; 32] =
    hex!("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");
const X25519_BOB_PUBLIC: [u8; 32] =
    hex!("de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
const X25519_SHARED: [u8; 32] =
    hex!("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");

/// RFC 7748 §6.1 with the private keys injected through the RNG. Only for providers that
/// draw ephemeral keys from the caller's RNG (not `fast::Ring`, see its module docs).
fn check_x25519_rfc7748<P: CryptoProvider>(p: &P) {
    let alice = p
        .start_key_exchange(NamedGroup::X25519, &mut FixedRng { outputs: &[&X25519_ALICE_PRIVATE] })
        .unwrap();
    assert_eq!(alice.public_key(), X25519_ALICE_PUBLIC);
    let bob = p
        .start_key_exchange(NamedGroup::X25519, &mut FixedRng { outputs: &[&X25519_BOB_PRIVATE] })
        .unwrap();
    assert_eq!(bob.public_key(), X25519_BOB_PUBLIC);
    assert_eq!(alice.complete(&X25519_BOB_PUBLIC).unwrap().as_ref(), X25519_SHARED);
    assert_eq!(bob.complete(&X25519_ALICE_PUBLIC).unwrap().as_ref(), X25519_SHARED);
    // A failing RNG is reported.
    assert_eq!(p.start_key_exchange(NamedGroup::X25519, &mut FailingRng).err(), Some(Error::Rng));
}

/// Small-order X25519 points, all of which give the all-zero shared secret that RFC 7748 §6.1
/// and RFC 8446 §7.4.2 require rejecting: u = 0, u = 1, a point of order 8 and p - 1 + 2^255
/// (non-canonical u = p - 1 with the top bit set, from the libsodium/curve25519 blocklist).
const X25519_SMALL_ORDER: [[u8; 32]; 4] = [
    [0; 32],
    hex!("0100000000000000000000000000000000000000000000000000000000000000"),
    hex!("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"),
    hex!("ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f"),
];

fn check_x25519<P: CryptoProvider>(p: &P) {
    let mut rng = TestRng(1);
    assert!(p.groups().contains(&NamedGroup::X25519));
    // Two parties agree.
    let a = p.start_key_exchange(NamedGroup::X25519, &mut rng).unwrap();
    let b = p.start_key_exchange(NamedGroup::X25519, &mut rng).unwrap();
    assert_eq!(a.group(), NamedGroup::X25519);
    assert_eq!(a.public_key().len(), 32);
    assert_ne!(a.public_key(), b.public_key());
    let (pa, pb) = (a.public_key().to_vec(), b.public_key().to_vec());
    let sa = a.complete(&pb).unwrap();
    let sb = b.complete(&pa).unwrap();
    assert_eq!(sa.as_ref(), sb.as_ref());

    for point in X25519_SMALL_ORDER {
        let k = p.start_key_exchange(NamedGroup::X25519, &mut rng).unwrap();
        assert_eq!(k.complete(&point).err(), Some(Error::BadPublicKey), "{point:02x?}");
    }
    for len in [0, 31, 33, 65] {
        let k = p.start_key_exchange(NamedGroup::X25519, &mut rng).unwrap();
        assert_eq!(k.complete(&vec![9u8; len]).err(), Some(Error::BadPublicKey), "length {len}");
    }
}

fn check_p256_ecdh<P: CryptoProvider>(p: &P) {
    let mut rng = TestRng(2);
    assert!(p.groups().contains(&NamedGroup::Secp256r1));
    let a = p.start_key_exchange(NamedGroup::Secp256r1, &mut rng).unwrap();
    let b = p.start_key_exchange(NamedGroup::Secp256r1, &mut rng).unwrap();
    assert_eq!(a.group(), NamedGroup::Secp256r1);
    // RFC 8446 §4.2.8.2: UncompressedPointRepresentation.
    assert_eq!(a.public_key().len(), 65);
    assert_eq!(a.public_key()[0], 0x04);
    let (pa, pb) = (a.public_key().to_vec(), b.public_key().to_vec());
    let sa = a.complete(&pb).unwrap();
    let sb = b.complete(&pa).unwrap();
    assert_eq!(sa.as_ref(), sb.as_ref());

    // Not on the curve: change one bit of y.
    let mut off_curve = pa.clone();
    off_curve[64] ^= 0x01;
    // The compressed form of the same point (valid SEC1, but TLS 1.3 forbids it).
    let mut compressed = vec![0x02 | (pa[64] & 1)];
    compressed.extend_from_slice(&pa[1..33]);
    // The same coordinates with a hybrid / bogus tag.
    let mut bad_tag = pa.clone();
    bad_tag[0] = 0x06;
    let bad: Vec<Vec<u8>> = vec![
        off_curve,
        compressed,
        bad_tag,
        vec![0x00],     // the identity (point at infinity)
        vec![0x04; 65], // x, y out of range
        [&[0x04][..], &[0u8; 64]].concat(),
        pa[..64].to_vec(),        // truncated
        [&pa[..], &[0]].concat(), // trailing byte
        vec![],
    ];
    for point in bad {
        let k = p.start_key_exchange(NamedGroup::Secp256r1, &mut rng).unwrap();
        assert_eq!(k.complete(&point).err(), Some(Error::BadPublicKey), "{point:02x?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Signatures
// ---------------------------------------------------------------------------------------------

/// RFC 8032 §7.1 TEST 1 (empty message) and TEST 2 (one byte 0x72).
const ED25519_TEST1_PUBLIC: [u8; 32] =
    hex!("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
const ED25519_TEST1_SIG: [u8; 64] = hex!(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46b"
    "d25bf5f0595bbe24655141438e7a100b"
);
const ED25519_TEST2_PUBLIC: [u8; 32] =
    hex!("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c");
const ED25519_TEST2_SIG: [u8; 64] = hex!(
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c"
    "387b2eaeb4302aeeb00d291612bb0c00"
);
/// RFC 8032 §7.1 TEST 1's secret key 9d61b1…7f60 as PKCS#8 v1 (RFC 8410 §7), as written by
/// `openssl pkcs8 -topk8 -nocrypt`.
const ED25519_TEST1_PKCS8: [u8; 48] = hex!(
    "302e020100300506032b6570042204209d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
);

/// RFC 6979 A.2.5: the P-256 key and its public point.
const P256_RFC6979_PUBLIC: [u8; 65] = hex!(
    "0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
    "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
);
/// RFC 6979 A.2.5 private key x = C9AFA9D8…0F6721 as PKCS#8 (RFC 5915 ECPrivateKey with the
/// public key, inside RFC 5208 PrivateKeyInfo).
const P256_RFC6979_PKCS8: [u8; 138] = hex!(
    "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420"
    "c9afa9d845ba75166b5c215767b1d6934e50c3db36e89b127b8a622b120f6721"
    "a144034200"
    "0460fed4ba255a9d31c961eb74c6356d68c049b8923b61fa6ce669622e60f29fb6"
    "7903fe1008b8bc99a41ae9e95628bc64f2f1b20c2d7e9f5177a3c294d4462299"
);
/// RFC 6979 A.2.5, ECDSA with SHA-256, message "sample": r = EFD48B2A…AF3716,
/// s = F7CB1C94…3ACDA8, DER-encoded (both integers need a leading zero byte).
const P256_RFC6979_SIG_SAMPLE: [u8; 72] = hex!(
    "3046022100efd48b2aacb6a8fd1140dd9cd45e81d69d2c877b56aaf991c34d0ea84eaf3716"
    "022100f7cb1c942d657c41d436c7a1b6e29f65f3e900dbb9aff4064dc4ab2f843acda8"
);
/// RFC 6979 A.2.5, ECDSA with SHA-256, message "test" (s needs no zero byte).
const P256_RFC6979_SIG_TEST: [u8; 71] = hex!(
    "3045022100f1abb023518351cd71d881567b1ea663ed3efcf6c5132b354f28d3b0b7d38367"
    "0220019f4113742a2b14bd25926b49c649155f267e60d3814b4c0cc84250e46f0083"
);

/// Test keys generated once with OpenSSL 3.0:
/// `openssl genpkey -algorithm ed25519 -outform DER` (PKCS#8 v1, no public key).
const ED25519_OPENSSL_PKCS8: [u8; 48] = hex!(
    "302e020100300506032b65700422042060aa26063942dd0f17ffcd3982173e2c65e7721d4d5793bb02be19674f04c8dd"
);
/// Its public key (`openssl pkey -pubout`).
const ED25519_OPENSSL_PUBLIC: [u8; 32] =
    hex!("526620615d2ea472a717296aa5170f3ac74afc8f702a4b0c2ad944febf56097a");
/// `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 | openssl pkcs8 -topk8
/// -nocrypt -outform DER`.
const P256_OPENSSL_PKCS8: [u8; 138] = hex!(
    "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420"
    "f2fcd0f59762e67b5cf536c65823cd7288ae88754d2e0625e5dff4b10486d0bc"
    "a144034200"
    "0429276f03eb4037b96a4921c23319715b75065ebbf2bc8414edba286036c1156a"
    "f323dd46c3f23a9df28118fd11b4f513c9483dbe28048a4f350a69d39825b9c0"
);
/// Its public point.
const P256_OPENSSL_PUBLIC: [u8; 65] = hex!(
    "0429276f03eb4037b96a4921c23319715b75065ebbf2bc8414edba286036c1156a"
    "f323dd46c3f23a9df28118fd11b4f513c9483dbe28048a4f350a69d39825b9c0"
);

/// RFC 8032 §5.1: the group order L = 2^252 + 27742317777372353535851937790883648493,
/// little-endian.
const ED25519_ORDER: [u8; 32] =
    hex!("edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010");

/// RFC 8032 §7.1 TEST 1 and TEST 2.
fn check_ed25519_verify<P: CryptoProvider>(p: &P) {
    let s = SignatureScheme::Ed25519;
    assert!(p.verify_schemes().contains(&s));
    p.verify(s, &ED25519_TEST1_PUBLIC, b"", &ED25519_TEST1_SIG).unwrap();
    p.verify(s, &ED25519_TEST2_PUBLIC, &[0x72], &ED25519_TEST2_SIG).unwrap();

    let bad = Err(Error::BadSignature);
    // Tampered message, signature, key; swapped vectors.
    assert_eq!(p.verify(s, &ED25519_TEST2_PUBLIC, &[0x73], &ED25519_TEST2_SIG), bad);
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"x", &ED25519_TEST1_SIG), bad);
    let mut sig = ED25519_TEST1_SIG;
    sig[10] ^= 0x04;
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &sig), bad);
    // S >= L (non-canonical, RFC 8032 §5.1.7): set the top bits of S.
    let mut sig = ED25519_TEST1_SIG;
    sig[63] |= 0xf0;
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &sig), bad);
    // S + L: the same signature with S out of range (the equation still holds mod L), which
    // RFC 8032 §5.1.7 rejects ("including S being out of range"): signature malleability.
    let mut sig = ED25519_TEST1_SIG;
    let mut carry = 0u16;
    for (b, l) in sig[32..].iter_mut().zip(ED25519_ORDER) {
        let sum = u16::from(*b) + u16::from(l) + carry;
        *b = sum as u8;
        carry = sum >> 8;
    }
    assert_eq!(carry, 0);
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &sig), bad);
    assert_eq!(p.verify(s, &ED25519_TEST2_PUBLIC, b"", &ED25519_TEST1_SIG), bad);
    // Wrong lengths are errors, not panics.
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC[..31], b"", &ED25519_TEST1_SIG), bad);
    assert_eq!(p.verify(s, &[], b"", &ED25519_TEST1_SIG), bad);
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &ED25519_TEST1_SIG[..63]), bad);
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &[]), bad);
    let long = [&ED25519_TEST1_SIG[..], &[0]].concat();
    assert_eq!(p.verify(s, &ED25519_TEST1_PUBLIC, b"", &long), bad);
}

/// RFC 6979 A.2.5 (P-256, SHA-256), messages "sample" and "test".
fn check_ecdsa_p256_verify<P: CryptoProvider>(p: &P) {
    let s = SignatureScheme::EcdsaSecp256r1Sha256;
    assert!(p.verify_schemes().contains(&s));
    p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &P256_RFC6979_SIG_SAMPLE).unwrap();
    p.verify(s, &P256_RFC6979_PUBLIC, b"test", &P256_RFC6979_SIG_TEST).unwrap();

    let bad = Err(Error::BadSignature);
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"samplf", &P256_RFC6979_SIG_SAMPLE), bad);
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"test", &P256_RFC6979_SIG_SAMPLE), bad);
    let mut sig = P256_RFC6979_SIG_SAMPLE;
    sig[40] ^= 0x01; // inside r
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &sig), bad);
    let mut sig = P256_RFC6979_SIG_SAMPLE;
    sig[71] ^= 0x01; // inside s
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &sig), bad);
    // Another key (the OpenSSL test key).
    assert_eq!(p.verify(s, &P256_OPENSSL_PUBLIC, b"sample", &P256_RFC6979_SIG_SAMPLE), bad);
    // Malformed DER and keys: errors, not panics.
    let sig = &P256_RFC6979_SIG_SAMPLE;
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &sig[..71]), bad);
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &[]), bad);
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &[0x30, 0x00]), bad);
    let trailing = [&sig[..], &[0]].concat();
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &trailing), bad);
    // Raw r || s (64 bytes) is not the TLS encoding.
    let raw = [&sig[5..37], &sig[40..72]].concat();
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &raw), bad);
    assert_eq!(p.verify(s, &P256_RFC6979_PUBLIC[..64], b"sample", sig), bad);
    assert_eq!(p.verify(s, &[], b"sample", sig), bad);
    let mut off_curve = P256_RFC6979_PUBLIC;
    off_curve[64] ^= 1;
    assert_eq!(p.verify(s, &off_curve, b"sample", sig), bad);
}

fn sign<K: mote_crypto::SigningKey>(key: &K, msg: &[u8]) -> Vec<u8> {
    let mut out = [0u8; MAX_SIGNATURE_LEN];
    let n = key.sign(&mut TestRng(3), msg, &mut out).unwrap();
    out[..n].to_vec()
}

/// Ed25519 signing from PKCS#8: RFC 8032 §7.1 TEST 1 byte-exact, and a round trip with the
/// OpenSSL-generated key.
fn check_ed25519_sign<P: CryptoProvider>(p: &P) {
    let s = SignatureScheme::Ed25519;
    let key = p.signing_key(s, &ED25519_TEST1_PKCS8).unwrap();
    assert_eq!(key.scheme(), s);
    assert_eq!(key.public_key(), ED25519_TEST1_PUBLIC);
    // RFC 8032 signatures are deterministic.
    assert_eq!(sign(&key, b""), ED25519_TEST1_SIG);

    let key = p.signing_key(s, &ED25519_OPENSSL_PKCS8).unwrap();
    assert_eq!(key.public_key(), ED25519_OPENSSL_PUBLIC);
    let sig = sign(&key, b"TLS 1.3, server CertificateVerify");
    assert_eq!(sig.len(), 64);
    p.verify(s, key.public_key(), b"TLS 1.3, server CertificateVerify", &sig).unwrap();
    assert_eq!(
        p.verify(s, key.public_key(), b"TLS 1.3, client CertificateVerify", &sig),
        Err(Error::BadSignature)
    );
    // Output buffer too small.
    let mut small = [0u8; 63];
    assert_eq!(key.sign(&mut TestRng(4), b"m", &mut small), Err(Error::BufferTooSmall));
    check_bad_pkcs8(p, s, &ED25519_OPENSSL_PKCS8);
}

/// ECDSA P-256 signing from PKCS#8: a round trip with the RFC 6979 and OpenSSL keys.
/// (Byte-exact RFC 6979 output is only expected of deterministic signers; see
/// `rustcrypto_ecdsa_is_rfc6979`.)
fn check_ecdsa_p256_sign<P: CryptoProvider>(p: &P) {
    let s = SignatureScheme::EcdsaSecp256r1Sha256;
    let key = p.signing_key(s, &P256_RFC6979_PKCS8).unwrap();
    assert_eq!(key.scheme(), s);
    assert_eq!(key.public_key(), P256_RFC6979_PUBLIC);
    let sig = sign(&key, b"sample");
    assert!(sig.len() <= MAX_SIGNATURE_LEN);
    assert_eq!(sig[0], 0x30, "DER SEQUENCE");
    p.verify(s, &P256_RFC6979_PUBLIC, b"sample", &sig).unwrap();

    let key = p.signing_key(s, &P256_OPENSSL_PKCS8).unwrap();
    assert_eq!(key.public_key(), P256_OPENSSL_PUBLIC);
    let sig = sign(&key, b"TLS 1.3, server CertificateVerify");
    p.verify(s, &P256_OPENSSL_PUBLIC, b"TLS 1.3, server CertificateVerify", &sig).unwrap();
    assert_eq!(
        p.verify(s, &P256_OPENSSL_PUBLIC, b"TLS 1.3, client CertificateVerify", &sig),
        Err(Error::BadSignature)
    );
    let mut small = [0u8; 8];
    assert_eq!(key.sign(&mut TestRng(5), b"m", &mut small), Err(Error::BufferTooSmall));
    check_bad_pkcs8(p, s, &P256_OPENSSL_PKCS8);
}

fn check_bad_pkcs8<P: CryptoProvider>(p: &P, s: SignatureScheme, good: &[u8]) {
    assert_eq!(p.signing_key(s, &[]).err(), Some(Error::BadPrivateKey));
    assert_eq!(p.signing_key(s, &good[..good.len() - 1]).err(), Some(Error::BadPrivateKey));
    assert_eq!(p.signing_key(s, &[0x30; 48]).err(), Some(Error::BadPrivateKey));
    // The other scheme's key.
    let other = match s {
        SignatureScheme::Ed25519 => &P256_OPENSSL_PKCS8[..],
        _ => &ED25519_OPENSSL_PKCS8[..],
    };
    assert_eq!(p.signing_key(s, other).err(), Some(Error::BadPrivateKey));
}

// ---------------------------------------------------------------------------------------------
// The whole suite
// ---------------------------------------------------------------------------------------------

/// Runs every known-answer test this build's features allow against `p`.
fn check_provider<P: CryptoProvider>(p: &P) {
    check_sha256(p);
    check_hmac_sha256(p);
    check_hkdf(p);
    check_expand_label(p);
    check_aes128_gcm(p);
    check_hp_aes128(p);
    check_x25519(p);
    #[cfg(feature = "aes256")]
    {
        check_sha384(p);
        check_hmac_sha384(p);
        check_aes256_gcm(p);
        check_hp_aes256(p);
    }
    #[cfg(feature = "chacha20")]
    {
        check_chacha20_poly1305(p);
        check_hp_chacha20(p);
    }
    #[cfg(feature = "p256")]
    check_p256_ecdh(p);
    #[cfg(feature = "ed25519")]
    check_ed25519_verify(p);
    #[cfg(feature = "ecdsa-p256")]
    check_ecdsa_p256_verify(p);
    #[cfg(all(feature = "sign", feature = "ed25519"))]
    check_ed25519_sign(p);
    #[cfg(all(feature = "sign", feature = "ecdsa-p256"))]
    check_ecdsa_p256_sign(p);
}

/// One `#[test]` per check, so a failure names the algorithm.
macro_rules! provider_tests {
    ($module:ident, $provider:expr) => {
        mod $module {
            use super::*;

            #[test]
            fn whole_suite() {
                check_provider(&$provider);
            }
            #[test]
            fn sha256() {
                check_sha256(&$provider);
            }
            #[test]
            fn hmac_sha256() {
                check_hmac_sha256(&$provider);
            }
            #[test]
            fn hkdf_rfc5869() {
                check_hkdf(&$provider);
            }
            #[test]
            fn hkdf_expand_label() {
                check_expand_label(&$provider);
            }
            #[test]
            fn aes128_gcm() {
                check_aes128_gcm(&$provider);
            }
            #[test]
            fn header_protection_aes128() {
                check_hp_aes128(&$provider);
            }
            #[test]
            fn x25519() {
                check_x25519(&$provider);
            }
            #[cfg(feature = "aes256")]
            #[test]
            fn sha384() {
                check_sha384(&$provider);
            }
            #[cfg(feature = "aes256")]
            #[test]
            fn hmac_sha384() {
                check_hmac_sha384(&$provider);
            }
            #[cfg(feature = "aes256")]
            #[test]
            fn aes256_gcm() {
                check_aes256_gcm(&$provider);
            }
            #[cfg(feature = "aes256")]
            #[test]
            fn header_protection_aes256() {
                check_hp_aes256(&$provider);
            }
            #[cfg(feature = "chacha20")]
            #[test]
            fn chacha20_poly1305() {
                check_chacha20_poly1305(&$provider);
            }
            #[cfg(feature = "chacha20")]
            #[test]
            fn header_protection_chacha20() {
                check_hp_chacha20(&$provider);
            }
            #[cfg(feature = "p256")]
            #[test]
            fn p256_ecdh() {
                check_p256_ecdh(&$provider);
            }
            #[cfg(feature = "ed25519")]
            #[test]
            fn ed25519_verify() {
                check_ed25519_verify(&$provider);
            }
            #[cfg(feature = "ecdsa-p256")]
            #[test]
            fn ecdsa_p256_verify() {
                check_ecdsa_p256_verify(&$provider);
            }
            #[cfg(all(feature = "sign", feature = "ed25519"))]
            #[test]
            fn ed25519_sign() {
                check_ed25519_sign(&$provider);
            }
            #[cfg(all(feature = "sign", feature = "ecdsa-p256"))]
            #[test]
            fn ecdsa_p256_sign() {
                check_ecdsa_p256_sign(&$provider);
            }
        }
    };
}

#[cfg(feature = "rustcrypto")]
provider_tests!(rustcrypto, mote_crypto::rustcrypto::RustCrypto);

#[cfg(feature = "std")]
provider_tests!(ring, mote_crypto::fast::Ring);

// ---------------------------------------------------------------------------------------------
// Provider-specific and cross-provider tests
// ---------------------------------------------------------------------------------------------

#[cfg(feature = "rustcrypto")]
mod rustcrypto_only {
    use super::*;
    use mote_crypto::rustcrypto::RustCrypto;

    /// Ed25519 with a small-order public key: for A = the identity, R = B and S = 1 satisfy
    /// [S]B = R + [k]A for every message, a forgery a cofactorless check alone accepts.
    /// RustCrypto rejects such keys (dalek's `verify_strict`; with `salty`, its own checks),
    /// also in their non-canonical encodings (y + p) and with the sign bit set.
    #[cfg(feature = "ed25519")]
    #[test]
    fn ed25519_small_order_key_forgery() {
        let base = hex!("5866666666666666666666666666666666666666666666666666666666666666");
        let mut sig = [0u8; 64];
        sig[..32].copy_from_slice(&base);
        sig[32] = 1;
        let identity = hex!("0100000000000000000000000000000000000000000000000000000000000000");
        let alias = hex!("eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f");
        let mut signed = identity;
        signed[31] |= 0x80;
        for key in [identity, alias, signed] {
            for msg in [&b""[..], b"forged"] {
                let r = RustCrypto.verify(SignatureScheme::Ed25519, &key, msg, &sig);
                assert_eq!(r, Err(Error::BadSignature), "{key:02x?}");
            }
        }
        // A small-order R with a valid key is refused as well, in every encoding.
        for r in [identity, alias, signed] {
            let mut sig = ED25519_TEST1_SIG;
            sig[..32].copy_from_slice(&r);
            let r = RustCrypto.verify(SignatureScheme::Ed25519, &ED25519_TEST1_PUBLIC, b"", &sig);
            assert_eq!(r, Err(Error::BadSignature));
        }
    }

    /// RustCrypto takes its ephemeral keys from the caller's RNG, so RFC 7748 §6.1 can be
    /// replayed exactly.
    #[test]
    fn x25519_rfc7748() {
        check_x25519_rfc7748(&RustCrypto);
    }

    #[cfg(feature = "p256")]
    #[test]
    fn p256_keygen_rng_failure() {
        assert_eq!(
            RustCrypto.start_key_exchange(NamedGroup::Secp256r1, &mut FailingRng).err(),
            Some(Error::Rng)
        );
        // An RNG stuck on an out-of-range scalar (all ones >= n) is reported, not looped on.
        struct Ones;
        impl CryptoRng for Ones {
            fn fill(&mut self, d: &mut [u8]) -> Result<(), Error> {
                d.fill(0xff);
                Ok(())
            }
        }
        assert_eq!(
            RustCrypto.start_key_exchange(NamedGroup::Secp256r1, &mut Ones).err(),
            Some(Error::Rng)
        );
    }

    /// RustCrypto's ECDSA is deterministic (RFC 6979), so A.2.5 reproduces byte for byte.
    #[cfg(all(feature = "sign", feature = "ecdsa-p256"))]
    #[test]
    fn ecdsa_is_rfc6979() {
        let key = RustCrypto
            .signing_key(SignatureScheme::EcdsaSecp256r1Sha256, &P256_RFC6979_PKCS8)
            .unwrap();
        assert_eq!(sign(&key, b"sample"), P256_RFC6979_SIG_SAMPLE);
        assert_eq!(sign(&key, b"test"), P256_RFC6979_SIG_TEST);
    }

    #[test]
    fn advertised_algorithms_match_features() {
        let p = RustCrypto;
        assert_eq!(
            p.aead_algorithms().contains(&AeadAlgorithm::Aes256Gcm),
            cfg!(feature = "aes256")
        );
        assert_eq!(
            p.aead_algorithms().contains(&AeadAlgorithm::ChaCha20Poly1305),
            cfg!(feature = "chacha20")
        );
        assert_eq!(p.groups().contains(&NamedGroup::Secp256r1), cfg!(feature = "p256"));
        assert_eq!(
            p.verify_schemes().contains(&SignatureScheme::Ed25519),
            cfg!(feature = "ed25519")
        );
        assert_eq!(
            p.verify_schemes().contains(&SignatureScheme::EcdsaSecp256r1Sha256),
            cfg!(feature = "ecdsa-p256")
        );
        assert_eq!(p.aead_algorithms()[0], AeadAlgorithm::Aes128Gcm);
        assert_eq!(p.groups()[0], NamedGroup::X25519);
    }

    // A build without an algorithm says so with `Error::Unsupported`, whatever the input.

    #[cfg(not(feature = "aes256"))]
    #[test]
    fn aes256_unsupported() {
        assert_eq!(
            RustCrypto.aead_key(AeadAlgorithm::Aes256Gcm, &[0; 32]).err(),
            Some(Error::Unsupported)
        );
        assert_eq!(
            RustCrypto.header_key(AeadAlgorithm::Aes256Gcm, &[0; 32]).err(),
            Some(Error::Unsupported)
        );
        assert_eq!(RustCrypto.hash(HashAlgorithm::Sha384).err(), Some(Error::Unsupported));
        assert_eq!(RustCrypto.hmac(HashAlgorithm::Sha384, b"key").err(), Some(Error::Unsupported));
        let mut out = [0u8; 48];
        assert_eq!(
            hkdf::expand_label(&RustCrypto, HashAlgorithm::Sha384, &[0; 48], b"x", b"", &mut out),
            Err(Error::Unsupported)
        );
    }

    #[cfg(not(feature = "chacha20"))]
    #[test]
    fn chacha20_unsupported() {
        assert_eq!(
            RustCrypto.aead_key(AeadAlgorithm::ChaCha20Poly1305, &[0; 32]).err(),
            Some(Error::Unsupported)
        );
        assert_eq!(
            RustCrypto.header_key(AeadAlgorithm::ChaCha20Poly1305, &[0; 32]).err(),
            Some(Error::Unsupported)
        );
    }

    #[cfg(not(feature = "p256"))]
    #[test]
    fn p256_unsupported() {
        assert_eq!(
            RustCrypto.start_key_exchange(NamedGroup::Secp256r1, &mut TestRng(0)).err(),
            Some(Error::Unsupported)
        );
    }

    #[cfg(not(feature = "ed25519"))]
    #[test]
    fn ed25519_unsupported() {
        assert_eq!(
            RustCrypto.verify(
                SignatureScheme::Ed25519,
                &ED25519_TEST1_PUBLIC,
                b"",
                &ED25519_TEST1_SIG
            ),
            Err(Error::Unsupported)
        );
        assert_eq!(
            RustCrypto.signing_key(SignatureScheme::Ed25519, &ED25519_TEST1_PKCS8).err(),
            Some(Error::Unsupported)
        );
    }

    #[cfg(not(feature = "ecdsa-p256"))]
    #[test]
    fn ecdsa_p256_unsupported() {
        assert_eq!(
            RustCrypto.verify(
                SignatureScheme::EcdsaSecp256r1Sha256,
                &P256_RFC6979_PUBLIC,
                b"sample",
                &P256_RFC6979_SIG_SAMPLE
            ),
            Err(Error::Unsupported)
        );
        assert_eq!(
            RustCrypto
                .signing_key(SignatureScheme::EcdsaSecp256r1Sha256, &P256_RFC6979_PKCS8)
                .err(),
            Some(Error::Unsupported)
        );
    }

    #[cfg(not(all(feature = "sign", any(feature = "ed25519", feature = "ecdsa-p256"))))]
    #[test]
    fn signing_unsupported() {
        assert_eq!(
            RustCrypto.signing_key(SignatureScheme::Ed25519, &ED25519_TEST1_PKCS8).err(),
            Some(Error::Unsupported)
        );
        assert_eq!(
            RustCrypto
                .signing_key(SignatureScheme::EcdsaSecp256r1Sha256, &P256_RFC6979_PKCS8)
                .err(),
            Some(Error::Unsupported)
        );
    }
}

#[cfg(feature = "std")]
mod cross_provider {
    use super::*;
    use mote_crypto::fast::{Ring, SystemRng};
    use mote_crypto::rustcrypto::RustCrypto;

    /// `ring` draws its ephemeral keys from the OS, so RFC 7748 §6.1 is checked through the
    /// RustCrypto side holding Bob's RFC private key (whose result against Alice
    /// `rustcrypto_only::x25519_rfc7748` checks byte for byte): ring agrees with it.
    #[test]
    fn x25519_ring_against_rfc7748_bob() {
        let bob = RustCrypto
            .start_key_exchange(
                NamedGroup::X25519,
                &mut FixedRng { outputs: &[&X25519_BOB_PRIVATE] },
            )
            .unwrap();
        assert_eq!(bob.public_key(), X25519_BOB_PUBLIC);
        let ours = Ring.start_key_exchange(NamedGroup::X25519, &mut SystemRng::new()).unwrap();
        let our_public = ours.public_key().to_vec();
        let s1 = ours.complete(&X25519_BOB_PUBLIC).unwrap();
        let s2 = bob.complete(&our_public).unwrap();
        assert_eq!(s1.as_ref(), s2.as_ref());
    }

    fn agree<A: CryptoProvider, B: CryptoProvider>(a: &A, b: &B, group: NamedGroup) {
        let mut rng = TestRng(7);
        let ka = a.start_key_exchange(group, &mut rng).unwrap();
        let kb = b.start_key_exchange(group, &mut rng).unwrap();
        let (pa, pb) = (ka.public_key().to_vec(), kb.public_key().to_vec());
        assert_eq!(
            ka.complete(&pb).unwrap().as_ref(),
            kb.complete(&pa).unwrap().as_ref(),
            "{group:?}"
        );
    }

    #[test]
    fn key_exchange_interop() {
        for group in [NamedGroup::X25519, NamedGroup::Secp256r1] {
            agree(&Ring, &RustCrypto, group);
            agree(&RustCrypto, &Ring, group);
        }
    }

    fn sign_with<A: CryptoProvider, B: CryptoProvider>(signer: &A, verifier: &B) {
        let msg = b"cross-provider CertificateVerify content";
        for (scheme, pkcs8) in [
            (SignatureScheme::Ed25519, &ED25519_OPENSSL_PKCS8[..]),
            (SignatureScheme::EcdsaSecp256r1Sha256, &P256_OPENSSL_PKCS8[..]),
            (SignatureScheme::EcdsaSecp256r1Sha256, &P256_RFC6979_PKCS8[..]),
        ] {
            let key = signer.signing_key(scheme, pkcs8).unwrap();
            let sig = sign(&key, msg);
            verifier.verify(scheme, key.public_key(), msg, &sig).unwrap();
            assert_eq!(
                verifier.verify(scheme, key.public_key(), b"other", &sig),
                Err(Error::BadSignature)
            );
        }
    }

    #[test]
    fn rustcrypto_signs_ring_verifies() {
        sign_with(&RustCrypto, &Ring);
    }

    #[test]
    fn ring_signs_rustcrypto_verifies() {
        sign_with(&Ring, &RustCrypto);
    }

    /// Same inputs, same outputs, for what has no standard vector here (SHA-384 HKDF,
    /// random-looking AEAD inputs of many lengths).
    #[test]
    fn same_outputs() {
        let mut rng = TestRng(11);
        for alg in [HashAlgorithm::Sha256, HashAlgorithm::Sha384] {
            let mut a = [0u8; 100];
            let mut b = [0u8; 100];
            hkdf::expand_label(&Ring, alg, &[7; 48], b"c hs traffic", &[1; 48], &mut a).unwrap();
            hkdf::expand_label(&RustCrypto, alg, &[7; 48], b"c hs traffic", &[1; 48], &mut b)
                .unwrap();
            assert_eq!(a, b);
        }
        for alg in
            [AeadAlgorithm::Aes128Gcm, AeadAlgorithm::Aes256Gcm, AeadAlgorithm::ChaCha20Poly1305]
        {
            let mut key = vec![0u8; alg.key_len()];
            rng.fill(&mut key).unwrap();
            let kr = Ring.aead_key(alg, &key).unwrap();
            let kc = RustCrypto.aead_key(alg, &key).unwrap();
            let hr = Ring.header_key(alg, &key).unwrap();
            let hc = RustCrypto.header_key(alg, &key).unwrap();
            for len in [0usize, 1, 15, 16, 17, 63, 64, 65, 255, 1200, 1500] {
                let mut nonce = [0u8; 12];
                let mut aad = [0u8; 21];
                let mut data = vec![0u8; len];
                rng.fill(&mut nonce).unwrap();
                rng.fill(&mut aad).unwrap();
                rng.fill(&mut data).unwrap();
                let mut d2 = data.clone();
                let t1 = kr.seal_in_place(&nonce, &aad, &mut data).unwrap();
                let t2 = kc.seal_in_place(&nonce, &aad, &mut d2).unwrap();
                assert_eq!((t1, &data), (t2, &d2), "{alg:?} {len}");
                kc.open_in_place(&nonce, &aad, &mut data, &t1).unwrap();
                kr.open_in_place(&nonce, &aad, &mut d2, &t2).unwrap();
                assert_eq!(data, d2);
                let mut sample = [0u8; 16];
                rng.fill(&mut sample).unwrap();
                assert_eq!(hr.mask(&sample).unwrap(), hc.mask(&sample).unwrap());
            }
        }
    }

    #[test]
    fn system_rng_fills() {
        let mut rng = SystemRng::default();
        let mut a = [0u8; 32];
        let mut b = [0u8; 32];
        rng.fill(&mut a).unwrap();
        rng.fill(&mut b).unwrap();
        assert_ne!(a, b);
        rng.fill(&mut []).unwrap();
    }

    #[test]
    fn ring_advertises_everything() {
        assert_eq!(Ring.aead_algorithms().len(), 3);
        assert_eq!(Ring.groups().len(), 2);
        assert_eq!(Ring.verify_schemes().len(), 2);
    }
}
