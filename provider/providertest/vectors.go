package providertest

import "strings"

// Known-answer vectors, copied as data from the documents named on each
// table. Hex strings; ciphertexts of AEADs include the tag.

// aeadVector is one AEAD known answer.
type aeadVector struct {
	source                string
	key, nonce, plain, ad string
	sealed                string // ciphertext ‖ tag
}

// sunscreen is the plaintext of RFC 8439 §2.4.2 and §2.8.2.
const sunscreen = "Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."

var sunscreenHex = hexOf(sunscreen)

const (
	gcmKey128  = "feffe9928665731c6d6a8f9467308308"
	gcmKey256  = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
	gcmIV      = "cafebabefacedbaddecaf888"
	gcmPlain64 = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72" +
		"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255"
	gcmPlain60 = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72" +
		"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
	gcmAD    = "feedfacedeadbeeffeedfacedeadbeefabaddad2"
	zero16   = "00000000000000000000000000000000"
	zero12   = "000000000000000000000000"
	zeroKey  = zero16
	zeroKey2 = zero16 + zero16
)

// aeadVectors: McGrew and Viega, "The Galois/Counter Mode of Operation
// (GCM)", test cases 1-4 (AES-128) and 13-16 (AES-256); RFC 8439 §2.8.2.
var aeadVectors = map[string][]aeadVector{
	"aes128-gcm": {
		{"GCM spec test case 1", zeroKey, zero12, "", "", "58e2fccefa7e3061367f1d57a4e7455a"},
		{"GCM spec test case 2", zeroKey, zero12, zero16, "", "0388dace60b6a392f328c2b971b2fe78" + "ab6e47d42cec13bdf53a67b21257bddf"},
		{"GCM spec test case 3", gcmKey128, gcmIV, gcmPlain64, "",
			"42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e" +
				"21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091473f5985" +
				"4d5c2af327cd64a62cf35abd2ba6fab4"},
		{"GCM spec test case 4", gcmKey128, gcmIV, gcmPlain60, gcmAD,
			"42831ec2217774244b7221b784d0d49ce3aa212f2c02a4e035c17e2329aca12e" +
				"21d514b25466931c7d8f6a5aac84aa051ba30b396a0aac973d58e091" +
				"5bc94fbc3221a5db94fae95ae7121a47"},
	},
	"aes256-gcm": {
		{"GCM spec test case 13", zeroKey2, zero12, "", "", "530f8afbc74536b9a963b4f1c4cb738b"},
		{"GCM spec test case 14", zeroKey2, zero12, zero16, "", "cea7403d4d606b6e074ec5d3baf39d18" + "d0d1c8a799996bf0265b98b5d48ab919"},
		{"GCM spec test case 15", gcmKey256, gcmIV, gcmPlain64, "",
			"522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" +
				"8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad" +
				"b094dac5d93471bdec1a502270e3cc6c"},
		{"GCM spec test case 16", gcmKey256, gcmIV, gcmPlain60, gcmAD,
			"522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa" +
				"8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662" +
				"76fc6ece0f4e1768cddf8853bb2d551b"},
	},
	"chacha20-poly1305": {
		{"RFC 8439 §2.8.2",
			"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
			"070000004041424344454647", sunscreenHex, "50515253c0c1c2c3c4c5c6c7",
			"d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6" +
				"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36" +
				"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc" +
				"3ff4def08e4b7a9de576d26586cec64b6116" +
				"1ae10b594f09e26a7e902ecbd0600691"},
	},
}

// streamVector is a cipher.Stream known answer (AES-CTR).
type streamVector struct {
	source                 string
	key, iv, plain, cipher string
}

const sp80038aPlain = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51" +
	"30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710"

// streamVectors: NIST SP 800-38A, F.5.1 and F.5.5 (CTR-AES128/256.Encrypt).
var streamVectors = map[string][]streamVector{
	"aes128-ctr": {{"SP 800-38A F.5.1", "2b7e151628aed2a6abf7158809cf4f3c",
		"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", sp80038aPlain,
		"874d6191b620e3261bef6864990db6ce9806f66b7970fdff8617187bb9fffdff" +
			"5ae4df3edbd5d35e5b4f09020db03eab1e031dda2fbe03d1792170a0f3009cee"}},
	"aes192-ctr": {{"SP 800-38A F.5.3", "8e73b0f7da0e6452c810f32b809079e562f8ead2522c6b7b",
		"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", sp80038aPlain,
		"1abc932417521ca24f2b0459fe7e6e0b090339ec0aa6faefd5ccc2c6f4ce8e94" +
			"1e36b26bd1ebc670d1bd1d665620abf74f78a7f6d29809585a97daec58c6b050"}},
	"aes256-ctr": {{"SP 800-38A F.5.5", "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4",
		"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff", sp80038aPlain,
		"601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5" +
			"2b0930daa23de94ce87017ba2d84988ddfc9c58db67aada613c2dd08457941a6"}},
}

// keyStreamVector is a KeyStream known answer (ChaCha20).
type keyStreamVector struct {
	source        string
	key, nonce    string
	counter       uint32
	plain, cipher string
}

const rfc8439Key = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

// keyStreamVectors: RFC 8439 §2.3.2 (one block of keystream, shown here as
// the encryption of zeros) and §2.4.2.
var keyStreamVectors = map[string][]keyStreamVector{
	"chacha20": {
		{"RFC 8439 §2.3.2", rfc8439Key, "000000090000004a00000000", 1,
			zero16 + zero16 + zero16 + zero16,
			"10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e" +
				"d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"},
		{"RFC 8439 §2.4.2", rfc8439Key, "000000000000004a00000000", 1, sunscreenHex,
			"6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b" +
				"f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8" +
				"07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736" +
				"5af90bbf74a35be6b40b8eedf2785e42874d"},
	},
}

// macVector is a keyed-hash or one-time MAC known answer.
type macVector struct {
	source        string
	key, msg, tag string
}

// macVectors: RFC 4231 test cases 1, 2, 3, 4, 6 and 7 (HMAC) and RFC 8439
// §2.5.2 (Poly1305).
var macVectors = map[string][]macVector{
	// RFC 2202 test cases 1 and 2.
	"hmac-sha1": {
		{"RFC 2202 test case 1", rep("0b", 20), hexOf("Hi There"), "b617318655057264e28bc0b6fb378c8ef146be00"},
		{"RFC 2202 test case 2", hexOf("Jefe"), hexOf("what do ya want for nothing?"),
			"effcdf6ae5eb2fa2d27416d5f184df9c259a7c79"},
	},
	"hmac-md5": {
		{"RFC 2202 test case 1", rep("0b", 16), hexOf("Hi There"), "9294727a3638bb1c13f48ef8158bfc9d"},
		{"RFC 2202 test case 2", hexOf("Jefe"), hexOf("what do ya want for nothing?"),
			"750c783e6ab0b503eaa86e310a5db738"},
	},
	// RFC 4418 §9 (UMAC-64; the RFC lists no UMAC-128): the 8-byte nonce
	// "bcdefghi" is written first.
	"umac-64": {
		{"RFC 4418 empty", hexOf("abcdefghijklmnop"), hexOf("bcdefghi"), "6e155fad26900be1"},
		{"RFC 4418 'a'*3", hexOf("abcdefghijklmnop"), hexOf("bcdefghiaaa"), "44b5cb542f220104"},
		{"RFC 4418 'abc'", hexOf("abcdefghijklmnop"), hexOf("bcdefghiabc"), "d4d7b9f6bd4fbfcf"},
		{"RFC 4418 'abc'*500", hexOf("abcdefghijklmnop"), hexOf("bcdefghi" + strings.Repeat("abc", 500)), "d4cf26ddefd5c01a"},
	},
	"hmac-sha256": {
		{"RFC 4231 test case 1", rep("0b", 20), hexOf("Hi There"),
			"b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"},
		{"RFC 4231 test case 2", hexOf("Jefe"), hexOf("what do ya want for nothing?"),
			"5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		{"RFC 4231 test case 3", rep("aa", 20), rep("dd", 50),
			"773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe"},
		{"RFC 4231 test case 4", "0102030405060708090a0b0c0d0e0f10111213141516171819", rep("cd", 50),
			"82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b"},
		{"RFC 4231 test case 6", rep("aa", 131), hexOf("Test Using Larger Than Block-Size Key - Hash Key First"),
			"60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"},
		{"RFC 4231 test case 7", rep("aa", 131), hexOf(rfc4231Case7),
			"9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2"},
	},
	"hmac-sha512": {
		{"RFC 4231 test case 1", rep("0b", 20), hexOf("Hi There"),
			"87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cde" +
				"daa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854"},
		{"RFC 4231 test case 2", hexOf("Jefe"), hexOf("what do ya want for nothing?"),
			"164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea250554" +
				"9758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737"},
		{"RFC 4231 test case 3", rep("aa", 20), rep("dd", 50),
			"fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39" +
				"bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb"},
		{"RFC 4231 test case 4", "0102030405060708090a0b0c0d0e0f10111213141516171819", rep("cd", 50),
			"b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3db" +
				"a91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd"},
		{"RFC 4231 test case 6", rep("aa", 131), hexOf("Test Using Larger Than Block-Size Key - Hash Key First"),
			"80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f352" +
				"6b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598"},
		{"RFC 4231 test case 7", rep("aa", 131), hexOf(rfc4231Case7),
			"e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944" +
				"b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58"},
	},
	"poly1305": {
		{"RFC 8439 §2.5.2", "85d6be7857556d337f4452fe42d506a80103808afb0db2fd4abff6af4149f51b",
			hexOf("Cryptographic Forum Research Group"), "a8061dc1305136c6c22b8baf0c0127a9"},
	},
}

const rfc4231Case7 = "This is a test using a larger than block-size key and a larger than block-size data. " +
	"The key needs to be hashed before being used by the HMAC algorithm."

// hashVectors: FIPS 180-2 appendix examples: "abc" and the two-block
// messages.
var hashVectors = map[string][]macVector{
	"sha1": {{"FIPS 180-2 A.1", "", hexOf("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d"}},
	"sha256": {
		{"FIPS 180-2 B.1", "", hexOf("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"FIPS 180-2 B.2", "", hexOf(twoBlock256), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	},
	"sha384": {
		{"FIPS 180-2 D.1", "", hexOf("abc"),
			"cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7"},
		{"FIPS 180-2 D.2", "", hexOf(twoBlock512),
			"09330c33f71147e83d192fc782cd1b4753111b173b3b05d22fa08086e3b0f712fcc7c71a557e2db966c3e9fa91746039"},
	},
	"sha512": {
		{"FIPS 180-2 C.1", "", hexOf("abc"),
			"ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a" +
				"2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f"},
		{"FIPS 180-2 C.2", "", hexOf(twoBlock512),
			"8e959b75dae313da8cf4f72814fc143f8f7779c6eb9f7fa17299aeadb6889018" +
				"501d289e4900f7e4331b99dec4b5433ac7d329eeb6dd26545e96e55b874be909"},
	},
}

const (
	twoBlock256 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
	twoBlock512 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno" +
		"ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"
)

// x25519Vector: RFC 7748 §6.1. The suite cannot set a provider's private
// key, so it checks its crypto/ecdh reference against this vector and
// then cross-checks providers against the reference.
var x25519Vector = struct {
	alicePriv, alicePub, bobPriv, bobPub, shared string
}{
	alicePriv: "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
	alicePub:  "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a",
	bobPriv:   "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
	bobPub:    "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f",
	shared:    "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742",
}

// x25519LowOrder lists u-coordinates of small order (and their encodings
// modulo p), whose shared secret is all zeros: every one must be rejected.
// The list is the one given in the Curve25519 literature (cr.yp.to/ecdh.html
// and the X25519 implementations that check for it).
var x25519LowOrder = []string{
	"0000000000000000000000000000000000000000000000000000000000000000", // 0
	"0100000000000000000000000000000000000000000000000000000000000000", // 1
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", // order 8
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157", // order 8
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p-1
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f", // p+1
	"0000000000000000000000000000000000000000000000000000000000000080", // 0 with bit 255 set (X25519 ignores it)
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b880", // order 8 with bit 255 set
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f11d7", // order 8 with bit 255 set
}

func hexOf(s string) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		out = append(out, digits[s[i]>>4], digits[s[i]&15])
	}
	return string(out)
}

func rep(h string, n int) string {
	out := ""
	for i := 0; i < n; i++ {
		out += h
	}
	return out
}
