package bucketwrite

import (
	"hash/maphash"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// keySlots is how many bucket keys a Writes keeps: a direct-mapped table,
// so a hot bucket's key is built once and a cold one costs what it did
// before the table existed (one map per request).
const keySlots = 1024

// keyCache holds the Key maps of recently written buckets, shared by every
// request to the same bucket. A slot is replaced whole, never changed, so
// a lookup takes no lock; a shared map is never written after it is
// published (Writes says requests must not modify it).
type keyCache struct {
	seed  maphash.Seed
	slots [keySlots]atomic.Pointer[bucketKey]
}

// bucketKey is one slot: a partition key and the request Key map for the
// bucket's state item.
type bucketKey struct {
	pk  string
	key map[string]types.AttributeValue
}

// keyFor returns the Key map of the state item whose partition key is pk.
func (c *keyCache) keyFor(pk []byte) map[string]types.AttributeValue {
	slot := &c.slots[maphash.Bytes(c.seed, pk)%keySlots]
	if k := slot.Load(); k != nil && k.pk == string(pk) {
		return k.key
	}
	k := &bucketKey{pk: string(pk)}
	k.key = map[string]types.AttributeValue{
		schema.AttrPK: &types.AttributeValueMemberS{Value: k.pk},
		schema.AttrSK: &types.AttributeValueMemberS{Value: schema.SKState},
	}
	slot.Store(k)
	return k.key
}
