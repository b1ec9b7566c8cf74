package model

import (
	"encoding/binary"
	"strings"
	"testing"
)

// The record codec puts a token's generation above its 10 shard bits in
// one uvarint, and refuses a value of more than 16 bits there.
func TestTokenCodec(t *testing.T) {
	rec := Record{Kind: KindAsync, Pos: 1, Token: Token{Gen: 3, Shard: 2, Run: 7, Pos: 1}}
	enc := EncodeRecord(nil, &rec)
	// kind, mask (3 bytes: bits 0 and 17), pos, then the token.
	tok := enc[1+3+1:]
	if v, n := binary.Uvarint(tok); n <= 0 || v != 3<<10|2 {
		t.Fatalf("token's first uvarint is %#x, want gen<<10|shard = %#x", v, 3<<10|2)
	}
	if got, err := DecodeRecord(enc); err != nil || got.Token != rec.Token {
		t.Fatalf("decoded %+v, %v; want %+v", got.Token, err, rec.Token)
	}
	bad := binary.AppendUvarint(append([]byte(nil), enc[:1+3+1]...), 1<<16)
	bad = binary.AppendUvarint(binary.AppendUvarint(bad, 7), 1)
	if _, err := DecodeRecord(bad); err == nil || !strings.Contains(err.Error(), "more than 16 bits") {
		t.Fatalf("a token with 17 bits of generation and shard: %v", err)
	}
}
