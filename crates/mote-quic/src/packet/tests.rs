//! Byte-exact tests against RFC 9001 Appendix A (QUIC v1) and RFC 9369 Appendix A (v2),
//! plus negative tests for protection.

use hex_literal::hex;
use mote_crypto::rustcrypto::RustCrypto;
use mote_crypto::{hkdf, AeadAlgorithm, AeadKey as _, CryptoProvider as _, HashAlgorithm};

use super::keys::KeyMaterial;
use super::*;
use crate::coding::Writer;
use crate::error::WireError;
use crate::version::Version;

/// The client-chosen Destination Connection ID of every Appendix A example.
const DCID: [u8; 8] = hex!("8394c8f03e515708");
/// The server's connection ID in A.3 and A.4.
const SERVER_CID: [u8; 8] = hex!("f067a5502a4262b5");

/// A.2 (both RFCs): the CRYPTO frame carrying the ClientHello; PADDING fills the payload to
/// 1162 bytes.
const CLIENT_CRYPTO_FRAME: [u8; 245] = hex!(
    "060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868"
    "04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578"
    "616d706c652e636f6dff01000100000a 00080006001d00170018001000070005"
    "04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba"
    "baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400"
    "0d0010000e0403050306030203080408 050806002d00020101001c0002400100"
    "3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000"
    "75300901100f088394c8f03e51570806 048000ffff"
);
const CLIENT_PAYLOAD_LEN: usize = 1162;

/// A.3 (both RFCs): an ACK frame and a CRYPTO frame carrying the ServerHello.
const SERVER_PAYLOAD: [u8; 99] = hex!(
    "02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739"
    "88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94"
    "0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00"
    "020304"
);

/// A.5 (both RFCs): the application traffic secret.
const CHACHA_SECRET: [u8; 32] = hex!(
    "9ac312a7f877468ebe69422748ad00a1"
    "5443f18203a07d6060f688f30f21632b"
);
const CHACHA_PN: u64 = 654_360_564;

// ---- RFC 9001 (v1) ----

const V1_INITIAL_SECRET: [u8; 32] = hex!(
    "7db5df06e7a69e432496adedb0085192"
    "3595221596ae2ae9fb8115c1e9ed0a44"
);
const V1_CLIENT_SECRET: [u8; 32] = hex!(
    "c00cf151ca5be075ed0ebfb5c80323c4"
    "2d6b7db67881289af4008f1f6c357aea"
);
const V1_CLIENT_KEY: [u8; 16] = hex!("1f369613dd76d5467730efcbe3b1a22d");
const V1_CLIENT_IV: [u8; 12] = hex!("fa044b2f42a3fd3b46fb255c");
const V1_CLIENT_HP: [u8; 16] = hex!("9f50449e04a0e810283a1e9933adedd2");
const V1_SERVER_SECRET: [u8; 32] = hex!(
    "3c199828fd139efd216c155ad844cc81"
    "fb82fa8d7446fa7d78be803acdda951b"
);
const V1_SERVER_KEY: [u8; 16] = hex!("cf3a5331653c364c88f0f379b6067e37");
const V1_SERVER_IV: [u8; 12] = hex!("0ac1493ca1905853b0bba03e");
const V1_SERVER_HP: [u8; 16] = hex!("c206b8d9b9f0f37644430b490eeaa314");

const V1_CLIENT_HEADER: [u8; 22] = hex!("c300000001088394c8f03e5157080000449e00000002");
const V1_CLIENT_PROTECTED: [u8; 1200] = hex!(
    "c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11"
    "d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399"
    "1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c"
    "8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212"
    "30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5"
    "457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208"
    "4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec"
    "4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3"
    "485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db"
    "059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c"
    "7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8"
    "9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556"
    "be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74"
    "68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a"
    "c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00"
    "f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632"
    "291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964"
    "25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd"
    "14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff"
    "ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198"
    "e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd"
    "c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73"
    "203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f"
    "cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e"
    "fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade"
    "a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047"
    "90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2"
    "162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4"
    "40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0"
    "6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e"
    "8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0"
    "be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400"
    "54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab"
    "760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9"
    "f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4"
    "056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064"
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241"
    "e221af44860018ab0856972e194cd934"
);

const V1_SERVER_HEADER: [u8; 20] = hex!("c1000000010008f067a5502a4262b50040750001");
const V1_SERVER_PROTECTED: [u8; 135] = hex!(
    "cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a"
    "5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3"
    "dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84"
    "022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4"
    "2158407dd074ee"
);

const V1_RETRY: [u8; 36] = hex!(
    "ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f"
    "0f2496ba"
);

const V1_CHACHA_KEY: [u8; 32] = hex!(
    "c6d98ff3441c3fe1b2182094f69caa2e"
    "d4b716b65488960a7a984979fb23e1c8"
);
const V1_CHACHA_IV: [u8; 12] = hex!("e0459b3474bdd0e44a41c144");
const V1_CHACHA_HP: [u8; 32] = hex!(
    "25a282b9e82f06f21f488917a4fc8f1b"
    "73573685608597d0efcb076b0ab7a7a4"
);
const V1_CHACHA_KU: [u8; 32] = hex!(
    "1223504755036d556342ee9361d25342"
    "1a826c9ecdf3c7148684b36b714881f9"
);
const V1_CHACHA_NONCE: [u8; 12] = hex!("e0459b3474bdd0e46d417eb0");
const V1_CHACHA_PACKET: [u8; 21] = hex!("4cfe4189655e5cd55c41f69080575d7999c25a5bfb");

// ---- RFC 9369 (v2) ----

#[cfg(feature = "v2")]
const V2_INITIAL_SECRET: [u8; 32] = hex!(
    "2062e8b3cd8d52092614b8071d0aa1fb"
    "7c2e3ac193f78b280e72d8f5751f6aba"
);
#[cfg(feature = "v2")]
const V2_CLIENT_SECRET: [u8; 32] = hex!(
    "14ec9d6eb9fd7af83bf5a668bc17a7e2"
    "83766aade7ecd0891f70f9ff7f4bf47b"
);
#[cfg(feature = "v2")]
const V2_CLIENT_KEY: [u8; 16] = hex!("8b1a0bc121284290a29e0971b5cd045d");
#[cfg(feature = "v2")]
const V2_CLIENT_IV: [u8; 12] = hex!("91f73e2351d8fa91660e909f");
#[cfg(feature = "v2")]
const V2_CLIENT_HP: [u8; 16] = hex!("45b95e15235d6f45a6b19cbcb0294ba9");
#[cfg(feature = "v2")]
const V2_SERVER_SECRET: [u8; 32] = hex!(
    "0263db1782731bf4588e7e4d93b74639"
    "07cb8cd8200b5da55a8bd488eafc37c1"
);
#[cfg(feature = "v2")]
const V2_SERVER_KEY: [u8; 16] = hex!("82db637861d55e1d011f19ea71d5d2a7");
#[cfg(feature = "v2")]
const V2_SERVER_IV: [u8; 12] = hex!("dd13c276499c0249d3310652");
#[cfg(feature = "v2")]
const V2_SERVER_HP: [u8; 16] = hex!("edf6d05c83121201b436e16877593c3a");

#[cfg(feature = "v2")]
const V2_CLIENT_HEADER: [u8; 22] = hex!("d36b3343cf088394c8f03e5157080000449e00000002");
#[cfg(feature = "v2")]
const V2_CLIENT_PROTECTED: [u8; 1200] = hex!(
    "d76b3343cf088394c8f03e5157080000 449ea0c95e82ffe67b6abcdb4298b485"
    "dd04de806071bf03dceebfa162e75d6c 96058bdbfb127cdfcbf903388e99ad04"
    "9f9a3dd4425ae4d0992cfff18ecf0fdb 5a842d09747052f17ac2053d21f57c5d"
    "250f2c4f0e0202b70785b7946e992e58 a59ac52dea6774d4f03b55545243cf1a"
    "12834e3f249a78d395e0d18f4d766004 f1a2674802a747eaa901c3f10cda5500"
    "cb9122faa9f1df66c392079a1b40f0de 1c6054196a11cbea40afb6ef5253cd68"
    "18f6625efce3b6def6ba7e4b37a40f77 32e093daa7d52190935b8da58976ff33"
    "12ae50b187c1433c0f028edcc4c2838b 6a9bfc226ca4b4530e7a4ccee1bfa2a3"
    "d396ae5a3fb512384b2fdd851f784a65 e03f2c4fbe11a53c7777c023462239dd"
    "6f7521a3f6c7d5dd3ec9b3f233773d4b 46d23cc375eb198c63301c21801f6520"
    "bcfb7966fc49b393f0061d974a2706df 8c4a9449f11d7f3d2dcbb90c6b877045"
    "636e7c0c0fe4eb0f697545460c806910 d2c355f1d253bc9d2452aaa549e27a1f"
    "ac7cf4ed77f322e8fa894b6a83810a34 b361901751a6f5eb65a0326e07de7c12"
    "16ccce2d0193f958bb3850a833f7ae43 2b65bc5a53975c155aa4bcb4f7b2c4e5"
    "4df16efaf6ddea94e2c50b4cd1dfe060 17e0e9d02900cffe1935e0491d77ffb4"
    "fdf85290fdd893d577b1131a610ef6a5 c32b2ee0293617a37cbb08b847741c3b"
    "8017c25ca9052ca1079d8b78aebd4787 6d330a30f6a8c6d61dd1ab5589329de7"
    "14d19d61370f8149748c72f132f0fc99 f34d766c6938597040d8f9e2bb522ff9"
    "9c63a344d6a2ae8aa8e51b7b90a4a806 105fcbca31506c446151adfeceb51b91"
    "abfe43960977c87471cf9ad4074d30e1 0d6a7f03c63bd5d4317f68ff325ba3bd"
    "80bf4dc8b52a0ba031758022eb025cdd 770b44d6d6cf0670f4e990b22347a7db"
    "848265e3e5eb72dfe8299ad7481a4083 22cac55786e52f633b2fb6b614eaed18"
    "d703dd84045a274ae8bfa73379661388 d6991fe39b0d93debb41700b41f90a15"
    "c4d526250235ddcd6776fc77bc97e7a4 17ebcb31600d01e57f32162a8560cacc"
    "7e27a096d37a1a86952ec71bd89a3e9a 30a2a26162984d7740f81193e8238e61"
    "f6b5b984d4d3dfa033c1bb7e4f0037fe bf406d91c0dccf32acf423cfa1e70710"
    "10d3f270121b493ce85054ef58bada42 310138fe081adb04e2bd901f2f13458b"
    "3d6758158197107c14ebb193230cd115 7380aa79cae1374a7c1e5bbcb80ee23e"
    "06ebfde206bfb0fcbc0edc4ebec30966 1bdd908d532eb0c6adc38b7ca7331dce"
    "8dfce39ab71e7c32d318d136b6100671 a1ae6a6600e3899f31f0eed19e3417d1"
    "34b90c9058f8632c798d4490da498730 7cba922d61c39805d072b589bd52fdf1"
    "e86215c2d54e6670e07383a27bbffb5a ddf47d66aa85a0c6f9f32e59d85a44dd"
    "5d3b22dc2be80919b490437ae4f36a0a e55edf1d0b5cb4e9a3ecabee93dfc6e3"
    "8d209d0fa6536d27a5d6fbb17641cde2 7525d61093f1b28072d111b2b4ae5f89"
    "d5974ee12e5cf7d5da4d6a31123041f3 3e61407e76cffcdcfd7e19ba58cf4b53"
    "6f4c4938ae79324dc402894b44faf8af bab35282ab659d13c93f70412e85cb19"
    "9a37ddec600545473cfb5a05e08d0b20 9973b2172b4d21fb69745a262ccde96b"
    "a18b2faa745b6fe189cf772a9f84cbfc"
);

#[cfg(feature = "v2")]
const V2_SERVER_HEADER: [u8; 20] = hex!("d16b3343cf0008f067a5502a4262b50040750001");
#[cfg(feature = "v2")]
const V2_SERVER_PROTECTED: [u8; 135] = hex!(
    "dc6b3343cf0008f067a5502a4262b500 4075d92faaf16f05d8a4398c47089698"
    "baeea26b91eb761d9b89237bbf872630 17915358230035f7fd3945d88965cf17"
    "f9af6e16886c61bfc703106fbaf3cb4c fa52382dd16a393e42757507698075b2"
    "c984c707f0a0812d8cd5a6881eaf21ce da98f4bd23f6fe1a3e2c43edd9ce7ca8"
    "4bed8521e2e140"
);

#[cfg(feature = "v2")]
const V2_RETRY: [u8; 36] = hex!(
    "cf6b3343cf0008f067a5502a4262b574 6f6b656ec8646ce8bfe33952d9555436"
    "65dcc7b6"
);

#[cfg(feature = "v2")]
const V2_CHACHA_KEY: [u8; 32] = hex!(
    "3bfcddd72bcf02541d7fa0dd1f5f9eee"
    "a817e09a6963a0e6c7df0f9a1bab90f2"
);
#[cfg(feature = "v2")]
const V2_CHACHA_IV: [u8; 12] = hex!("a6b5bc6ab7dafce30ffff5dd");
#[cfg(feature = "v2")]
const V2_CHACHA_HP: [u8; 32] = hex!(
    "d659760d2ba434a226fd37b35c69e2da"
    "8211d10c4f12538787d65645d5d1b8e2"
);
#[cfg(feature = "v2")]
const V2_CHACHA_KU: [u8; 32] = hex!(
    "c69374c49e3d2a9466fa689e49d476db"
    "5d0dfbc87d32ceeaa6343fd0ae4c7d88"
);
#[cfg(feature = "v2")]
const V2_CHACHA_NONCE: [u8; 12] = hex!("a6b5bc6ab7dafce328ff4a29");
#[cfg(feature = "v2")]
const V2_CHACHA_PACKET: [u8; 21] = hex!("5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba");

// ---- Shared checks ----

struct InitialVector {
    version: Version,
    initial_secret: [u8; 32],
    client: ([u8; 32], [u8; 16], [u8; 12], [u8; 16]),
    server: ([u8; 32], [u8; 16], [u8; 12], [u8; 16]),
}

/// A.1: the Initial secret, both sides' secrets, and their key, IV and HP key.
fn check_keys(v: &InitialVector) {
    let params = v.version.params().unwrap();
    let initial =
        hkdf::extract(&RustCrypto, HashAlgorithm::Sha256, &params.initial_salt, &DCID).unwrap();
    assert_eq!(initial.as_ref(), v.initial_secret);

    let (client, server) = initial_secrets(&RustCrypto, v.version, &DCID).unwrap();
    for (secret, (want_secret, key, iv, hp)) in [(client, v.client), (server, v.server)] {
        assert_eq!(secret.as_ref(), want_secret);
        let m =
            KeyMaterial::derive(&RustCrypto, v.version, AeadAlgorithm::Aes128Gcm, secret.as_ref())
                .unwrap();
        assert_eq!(m.key.as_ref(), key);
        assert_eq!(m.iv.as_ref(), iv);
        assert_eq!(m.hp.as_ref(), hp);
    }
}

/// A.2: the client Initial, from header fields + CRYPTO frame + PADDING to the RFC's 1200
/// protected bytes, and back.
fn check_client_initial(version: Version, header: &[u8; 22], protected: &[u8; 1200]) {
    let keys = initial_keys(&RustCrypto, version, &DCID).unwrap();

    // Protect.
    let mut buf = [0u8; 1200];
    let mut w = Writer::new(&mut buf);
    let offsets = LongHeader { ty: LongType::Initial, version, dcid: &DCID, scid: &[], token: &[] }
        .emit(&mut w, 2, 4)
        .unwrap();
    w.put_slice(&CLIENT_CRYPTO_FRAME).unwrap();
    w.put_repeated(0, CLIENT_PAYLOAD_LEN - CLIENT_CRYPTO_FRAME.len()).unwrap();
    w.reserve(TAG_LEN).unwrap();
    let len = w.position();
    assert_eq!(len, 1200);
    offsets.set_length(&mut buf, len).unwrap();
    assert_eq!(&buf[..22], header);
    assert_eq!(offsets.pn_offset, 18);
    keys.client.protect(&mut buf, offsets.pn_offset, 2).unwrap();
    assert_eq!(buf, *protected);

    // Unprotect (as the server would).
    let mut pkt = *protected;
    let parsed = parse(&pkt, 0, false).unwrap();
    assert_eq!(parsed.len, 1200);
    assert_eq!(parsed.pn_offset, Some(18));
    let Header::Long(h) = parsed.header else { panic!("not a long header") };
    assert_eq!(
        h,
        LongHeader { ty: LongType::Initial, version, dcid: &DCID, scid: &[], token: &[] }
    );
    let u = keys.client.unprotect(&mut pkt, 18, None).unwrap();
    assert_eq!(u.pn, 2);
    assert_eq!(u.header_len, 22);
    assert_eq!(u.payload_len, CLIENT_PAYLOAD_LEN);
    assert_eq!(&pkt[..22], header);
    let payload = &pkt[u.payload_range()];
    assert_eq!(&payload[..CLIENT_CRYPTO_FRAME.len()], CLIENT_CRYPTO_FRAME);
    assert!(payload[CLIENT_CRYPTO_FRAME.len()..].iter().all(|&b| b == 0));

    // The server cannot open it with its own keys.
    let mut pkt = *protected;
    assert_eq!(keys.server.unprotect(&mut pkt, 18, None), Err(WireError::DecryptFailed));
}

/// A.3: the server Initial, both ways.
fn check_server_initial(version: Version, header: &[u8; 20], protected: &[u8; 135]) {
    let keys = initial_keys(&RustCrypto, version, &DCID).unwrap();

    let mut buf = [0u8; 135];
    let mut w = Writer::new(&mut buf);
    let offsets =
        LongHeader { ty: LongType::Initial, version, dcid: &[], scid: &SERVER_CID, token: &[] }
            .emit(&mut w, 1, 2)
            .unwrap();
    w.put_slice(&SERVER_PAYLOAD).unwrap();
    w.reserve(TAG_LEN).unwrap();
    let len = w.position();
    assert_eq!(len, 135);
    offsets.set_length(&mut buf, len).unwrap();
    assert_eq!(&buf[..20], header);
    keys.server.protect(&mut buf, offsets.pn_offset, 1).unwrap();
    assert_eq!(buf, *protected);

    let mut pkt = *protected;
    let parsed = parse(&pkt, 0, false).unwrap();
    assert_eq!(parsed.len, 135);
    let Header::Long(h) = parsed.header else { panic!("not a long header") };
    assert_eq!(h.scid, SERVER_CID);
    assert!(h.dcid.is_empty());
    let pn_offset = parsed.pn_offset.unwrap();
    assert_eq!(pn_offset, 18);
    let u = keys.server.unprotect(&mut pkt, pn_offset, None).unwrap();
    assert_eq!(u.pn, 1);
    assert_eq!(&pkt[..20], header);
    assert_eq!(&pkt[u.payload_range()], SERVER_PAYLOAD);
}

/// A.4: the Retry tag over the ODCID reproduces the RFC packet; verification accepts it and
/// rejects any one-bit change.
fn check_retry(version: Version, retry: &[u8; 36]) {
    let (body, tag) = retry.split_at(retry.len() - TAG_LEN);
    let computed = retry_integrity_tag(&RustCrypto, version, &DCID, body).unwrap();
    assert_eq!(computed, tag);

    // Emitting from the fields gives the same bytes (the RFC's Unused bits are all ones).
    let parsed = parse(retry, 0, false).unwrap();
    assert_eq!(parsed.len, 36);
    let Header::Retry(r) = parsed.header else { panic!("not a Retry") };
    assert_eq!(r.version, version);
    assert!(r.dcid.is_empty());
    assert_eq!(r.scid, SERVER_CID);
    assert_eq!(r.token, b"token");
    let mut out = [0u8; 64];
    let n = r.emit(&RustCrypto, 0x0f, &DCID, &mut out).unwrap();
    assert_eq!(&out[..n], retry);
    // Too small for the pseudo-packet prefix.
    let mut small = [0u8; 40];
    assert!(r.emit(&RustCrypto, 0x0f, &DCID, &mut small).is_err());

    verify_retry(&RustCrypto, version, &DCID, retry).unwrap();
    for bit in 0..retry.len() * 8 {
        let mut bad = *retry;
        bad[bit / 8] ^= 1 << (bit % 8);
        assert_eq!(
            verify_retry(&RustCrypto, version, &DCID, &bad),
            Err(WireError::DecryptFailed),
            "bit {bit}"
        );
    }
    // A different ODCID, one over 20 bytes, or a packet shorter than a tag also fail.
    assert!(verify_retry(&RustCrypto, version, &SERVER_CID, retry).is_err());
    assert!(verify_retry(&RustCrypto, version, &[0; 21], retry).is_err());
    assert_eq!(verify_retry(&RustCrypto, version, &DCID, &retry[..15]), Err(WireError::Truncated));
}

/// RFC 9001 §5.8: the tag computed from the pseudo-packet's parts equals the one-piece
/// AES-128-GCM seal of the contiguous pseudo-packet, for every ODCID length and packets of
/// several lengths (around GHASH's 16-byte blocks), v1 and (feature `v2`) v2.
#[test]
fn retry_tag_in_parts_equals_one_piece_seal() {
    let packet: [u8; 140] = core::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ 0xf0);
    let odcid: [u8; 20] = core::array::from_fn(|i| 0x40 + i as u8);
    for version in [
        Version::V1,
        #[cfg(feature = "v2")]
        Version::V2,
    ] {
        let params = version.params().unwrap();
        let key = RustCrypto.aead_key(AeadAlgorithm::Aes128Gcm, &params.retry_key).unwrap();
        for odcid_len in 0..=20 {
            let odcid = &odcid[..odcid_len];
            for len in [7, 15, 16, 17, 24, 31, 32, 33, 47, 63, 64, 65, 100, 140] {
                let body = &packet[..len];
                let mut pseudo = [0u8; 1 + 20 + 140];
                pseudo[0] = odcid_len as u8;
                pseudo[1..1 + odcid_len].copy_from_slice(odcid);
                pseudo[1 + odcid_len..1 + odcid_len + len].copy_from_slice(body);
                let pseudo = &pseudo[..1 + odcid_len + len];
                let sealed = key.seal_in_place(&params.retry_nonce, pseudo, &mut []).unwrap();
                let parted = retry_integrity_tag(&RustCrypto, version, odcid, body).unwrap();
                assert_eq!(parted, sealed, "{version:?} odcid {odcid_len} packet {len}");
                let mut retry = [0u8; 140 + TAG_LEN];
                retry[..len].copy_from_slice(body);
                retry[len..len + TAG_LEN].copy_from_slice(&sealed);
                verify_retry(&RustCrypto, version, odcid, &retry[..len + TAG_LEN]).unwrap();
            }
        }
    }
}

struct ChaChaVector {
    version: Version,
    key: [u8; 32],
    iv: [u8; 12],
    hp: [u8; 32],
    ku: [u8; 32],
    nonce: [u8; 12],
    packet: [u8; 21],
}

/// A.5: a ChaCha20-Poly1305 short-header packet (PN 654360564 in 3 bytes), both ways.
fn check_chacha(v: &ChaChaVector) {
    let alg = AeadAlgorithm::ChaCha20Poly1305;
    let m = KeyMaterial::derive(&RustCrypto, v.version, alg, &CHACHA_SECRET).unwrap();
    assert_eq!(m.key.as_ref(), v.key);
    assert_eq!(m.iv.as_ref(), v.iv);
    assert_eq!(m.hp.as_ref(), v.hp);
    let ku = next_secret(&RustCrypto, v.version, alg.hash(), &CHACHA_SECRET).unwrap();
    assert_eq!(ku.as_ref(), v.ku);

    let keys = PacketKeys::from_secret(&RustCrypto, v.version, alg, &CHACHA_SECRET).unwrap();
    assert_eq!(keys.packet.nonce(CHACHA_PN), v.nonce);

    // Protect: header 4200bff4, PING.
    let mut buf = [0u8; 21];
    let mut w = Writer::new(&mut buf);
    let pn_offset =
        ShortHeader { dcid: &[], spin: false }.emit(&mut w, false, CHACHA_PN, 3).unwrap();
    w.put_u8(0x01).unwrap();
    w.reserve(TAG_LEN).unwrap();
    assert_eq!(w.position(), 21);
    assert_eq!(&buf[..4], hex!("4200bff4"));
    keys.protect(&mut buf, pn_offset, CHACHA_PN).unwrap();
    assert_eq!(buf, v.packet);

    // Unprotect.
    let mut pkt = v.packet;
    let parsed = parse(&pkt, 0, false).unwrap();
    assert_eq!(parsed.header, Header::Short(ShortHeader { dcid: &[], spin: false }));
    assert_eq!(parsed.pn_offset, Some(1));
    let u = keys.unprotect(&mut pkt, 1, Some(CHACHA_PN - 1)).unwrap();
    assert_eq!(u.pn, CHACHA_PN);
    assert!(!u.key_phase());
    assert_eq!(&pkt[u.payload_range()], [0x01]);
    assert_eq!(&pkt[..4], hex!("4200bff4"));
}

// ---- RFC 9001 Appendix A ----

#[test]
fn rfc9001_a1_keys() {
    check_keys(&InitialVector {
        version: Version::V1,
        initial_secret: V1_INITIAL_SECRET,
        client: (V1_CLIENT_SECRET, V1_CLIENT_KEY, V1_CLIENT_IV, V1_CLIENT_HP),
        server: (V1_SERVER_SECRET, V1_SERVER_KEY, V1_SERVER_IV, V1_SERVER_HP),
    });
}

#[test]
fn rfc9001_a2_client_initial() {
    check_client_initial(Version::V1, &V1_CLIENT_HEADER, &V1_CLIENT_PROTECTED);
}

#[test]
fn rfc9001_a3_server_initial() {
    check_server_initial(Version::V1, &V1_SERVER_HEADER, &V1_SERVER_PROTECTED);
}

#[test]
fn rfc9001_a4_retry() {
    check_retry(Version::V1, &V1_RETRY);
}

#[test]
fn rfc9001_a5_chacha20_short_header() {
    check_chacha(&ChaChaVector {
        version: Version::V1,
        key: V1_CHACHA_KEY,
        iv: V1_CHACHA_IV,
        hp: V1_CHACHA_HP,
        ku: V1_CHACHA_KU,
        nonce: V1_CHACHA_NONCE,
        packet: V1_CHACHA_PACKET,
    });
}

// ---- RFC 9369 Appendix A ----

#[test]
#[cfg(feature = "v2")]
fn rfc9369_a1_keys() {
    check_keys(&InitialVector {
        version: Version::V2,
        initial_secret: V2_INITIAL_SECRET,
        client: (V2_CLIENT_SECRET, V2_CLIENT_KEY, V2_CLIENT_IV, V2_CLIENT_HP),
        server: (V2_SERVER_SECRET, V2_SERVER_KEY, V2_SERVER_IV, V2_SERVER_HP),
    });
}

#[test]
#[cfg(feature = "v2")]
fn rfc9369_a2_client_initial() {
    check_client_initial(Version::V2, &V2_CLIENT_HEADER, &V2_CLIENT_PROTECTED);
}

#[test]
#[cfg(feature = "v2")]
fn rfc9369_a3_server_initial() {
    check_server_initial(Version::V2, &V2_SERVER_HEADER, &V2_SERVER_PROTECTED);
}

#[test]
#[cfg(feature = "v2")]
fn rfc9369_a4_retry() {
    check_retry(Version::V2, &V2_RETRY);
}

#[test]
#[cfg(feature = "v2")]
fn rfc9369_a5_chacha20_short_header() {
    check_chacha(&ChaChaVector {
        version: Version::V2,
        key: V2_CHACHA_KEY,
        iv: V2_CHACHA_IV,
        hp: V2_CHACHA_HP,
        ku: V2_CHACHA_KU,
        nonce: V2_CHACHA_NONCE,
        packet: V2_CHACHA_PACKET,
    });
}

// ---- Negative tests and separate steps ----

#[test]
fn tampered_ciphertext_fails_to_open() {
    let keys = initial_keys(&RustCrypto, Version::V1, &DCID).unwrap();
    // Every byte after the header protection sample's influence: flip one bit in the
    // payload, in the tag, and in the (protected) header.
    for at in [0usize, 5, 17, 22, 100, 1183, 1199] {
        let mut pkt = V1_CLIENT_PROTECTED;
        pkt[at] ^= 0x01;
        assert!(keys.client.unprotect(&mut pkt, 18, None).is_err(), "byte {at}");
    }
}

#[test]
fn too_short_to_sample() {
    let keys = initial_keys(&RustCrypto, Version::V1, &DCID).unwrap();
    // pn_offset 18 needs 18 + 4 + 16 = 38 bytes.
    for len in 0..38 {
        let mut pkt = [0u8; 38];
        pkt[..len].copy_from_slice(&V1_CLIENT_PROTECTED[..len]);
        assert_eq!(
            keys.client.unprotect(&mut pkt[..len], 18, None),
            Err(WireError::Truncated),
            "{len}"
        );
        assert_eq!(
            remove_header_protection(&keys.client.header, &mut pkt[..len], 18),
            Err(WireError::Truncated)
        );
    }
    // A huge pn_offset must not overflow.
    let mut pkt = V1_CLIENT_PROTECTED;
    assert_eq!(keys.client.unprotect(&mut pkt, usize::MAX - 3, None), Err(WireError::Truncated));
    // Sending: a 1-byte packet number with a 1-byte payload cannot be sampled.
    let mut buf = [0u8; 1 + 1 + 1 + TAG_LEN];
    let mut w = Writer::new(&mut buf);
    let pn_offset = ShortHeader { dcid: &[], spin: false }.emit(&mut w, false, 0, 1).unwrap();
    let before = buf;
    assert!(keys.client.protect(&mut buf, pn_offset, 0).is_err());
    assert_eq!(buf, before, "a failed protect leaves the packet untouched");
}

#[test]
fn reserved_bits_checked_after_open() {
    // Build a short-header packet with a reserved bit set; it must open (authenticated)
    // and then fail with ReservedBitsSet, a PROTOCOL_VIOLATION.
    let keys =
        PacketKeys::from_secret(&RustCrypto, Version::V1, AeadAlgorithm::Aes128Gcm, &CHACHA_SECRET)
            .unwrap();
    let mut buf = [0u8; 1 + 4 + 4 + TAG_LEN];
    let mut w = Writer::new(&mut buf);
    let pn_offset = ShortHeader { dcid: &[0xaa, 0xbb, 0xcc, 0xdd], spin: true }
        .emit(&mut w, true, 7, 1)
        .unwrap();
    w.put_slice(&[1, 0, 0]).unwrap();
    w.reserve(TAG_LEN).unwrap();
    buf[0] |= 0x08;
    keys.protect(&mut buf, pn_offset, 7).unwrap();
    let mut pkt = buf;
    let err = keys.unprotect(&mut pkt, pn_offset, Some(6)).unwrap_err();
    assert_eq!(err, WireError::ReservedBitsSet);
    assert_eq!(err.code(), crate::TransportErrorCode::PROTOCOL_VIOLATION);
    assert_eq!(check_reserved_bits(0xc0 | 0x04), Err(WireError::ReservedBitsSet));
    assert_eq!(check_reserved_bits(0x40 | 0x04 | 0x20), Ok(()));

    // The separate steps, as an offload engine would run them, agree; the key phase and
    // spin bits survive.
    let mut pkt = buf;
    let t = remove_header_protection(&keys.header, &mut pkt, pn_offset).unwrap();
    assert_eq!(t.len, 1);
    assert_ne!(t.first_byte & KEY_PHASE_BIT, 0);
    assert_ne!(t.first_byte & SPIN_BIT, 0);
    let pn = number::decode(Some(6), t.value, t.len);
    assert_eq!(pn, 7);
    let header_len = pn_offset + t.len;
    let (header, rest) = pkt.split_at_mut(header_len);
    let (payload, tag) = rest.split_at_mut(3);
    keys.packet.open(pn, header, payload, (&*tag).try_into().unwrap()).unwrap();
    assert_eq!(payload, [1, 0, 0]);
}

#[test]
fn separate_steps_match_combined() {
    // Seal with the split AEAD call and apply header protection by hand: same bytes as
    // `protect` and as the RFC.
    let keys = initial_keys(&RustCrypto, Version::V1, &DCID).unwrap();
    let mut buf = [0u8; 1200];
    buf[..22].copy_from_slice(&V1_CLIENT_HEADER);
    buf[22..22 + CLIENT_CRYPTO_FRAME.len()].copy_from_slice(&CLIENT_CRYPTO_FRAME);
    let (header, rest) = buf.split_at_mut(22);
    let (payload, tag_out) = rest.split_at_mut(CLIENT_PAYLOAD_LEN);
    let tag = keys.client.packet.seal(2, header, payload).unwrap();
    tag_out.copy_from_slice(&tag);
    apply_header_protection(&keys.client.header, &mut buf, 18).unwrap();
    assert_eq!(buf, V1_CLIENT_PROTECTED);

    // And open in place after removing header protection.
    let t = remove_header_protection(&keys.client.header, &mut buf, 18).unwrap();
    assert_eq!((t.value, t.len), (2, 4));
    let n = keys.client.packet.open_in_place(2, &mut buf, 22).unwrap();
    assert_eq!(n, CLIENT_PAYLOAD_LEN);
    // A wrong packet number fails.
    let mut pkt = V1_CLIENT_PROTECTED;
    remove_header_protection(&keys.client.header, &mut pkt, 18).unwrap();
    assert_eq!(keys.client.packet.open_in_place(3, &mut pkt, 22), Err(WireError::DecryptFailed));
}

#[test]
fn key_update_derives_new_packet_key() {
    // RFC 9001 §6: the next phase's key comes from the "quic ku" secret; it differs, and
    // packets sealed under it open only under it.
    let alg = AeadAlgorithm::ChaCha20Poly1305;
    let next = next_secret(&RustCrypto, Version::V1, alg.hash(), &CHACHA_SECRET).unwrap();
    let k0 = PacketKey::from_secret(&RustCrypto, Version::V1, alg, &CHACHA_SECRET).unwrap();
    let k1 = PacketKey::from_secret(&RustCrypto, Version::V1, alg, next.as_ref()).unwrap();
    let mut payload = [1u8, 2, 3];
    let tag = k1.seal(9, b"hdr", &mut payload).unwrap();
    let mut copy = payload;
    assert!(k0.open(9, b"hdr", &mut copy, &tag).is_err());
    k1.open(9, b"hdr", &mut payload, &tag).unwrap();
    assert_eq!(payload, [1, 2, 3]);
    assert_eq!(k1.algorithm(), alg);
}

#[test]
fn unsupported_version_has_no_keys() {
    assert!(initial_keys(&RustCrypto, Version(0x1a2a3a4a), &DCID).is_err());
    assert!(retry_integrity_tag(&RustCrypto, Version(0x1a2a3a4a), &DCID, &V1_RETRY).is_err());
}

proptest::proptest! {
    /// Arbitrary bytes never panic unprotection, whatever the packet number offset.
    #[test]
    fn random_packets_never_panic_unprotect(
        bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200),
        pn_offset in 0usize..64,
        largest in proptest::option::of(0u64..(1 << 62)),
    ) {
        let keys = initial_keys(&RustCrypto, Version::V1, &DCID).unwrap();
        let mut buf = [0u8; 200];
        let pkt = &mut buf[..bytes.len()];
        pkt.copy_from_slice(&bytes);
        let _ = keys.client.unprotect(pkt, pn_offset, largest);
    }
}
