package construct

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestTableDefinitionFollowsProps(t *testing.T) {
	cases := []struct {
		props TableProps
		want  types.ProjectionType
	}{
		{TableProps{}, types.ProjectionTypeKeysOnly},
		{TableProps{GSI2ProjectAll: true}, types.ProjectionTypeAll},
	}
	for _, c := range cases {
		def := TableDefinition(c.props)
		var got types.ProjectionType
		for _, ix := range def.GlobalIndexes {
			if ix.Name == "GSI2" {
				got = ix.Projection
			}
		}
		if got != c.want {
			t.Errorf("props %+v: GSI2 projection %s, want %s", c.props, got, c.want)
		}
		if def.TTLAttribute != "ttl" || def.StreamView != types.StreamViewTypeNewAndOldImages {
			t.Errorf("props %+v: ttl %q stream %s", c.props, def.TTLAttribute, def.StreamView)
		}
	}
}
