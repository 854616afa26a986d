package provision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/zae-limiter/zae-limiter-go/core/control"
	"github.com/zae-limiter/zae-limiter-go/core/manifest"
	"github.com/zae-limiter/zae-limiter-go/core/schema"
)

// Attribute names of owner records and claims (docs/design.md §12).
const (
	attrOwner       = "owner"
	attrStackID     = "stack_id"
	attrPhysicalID  = "physical_id"
	attrStatus      = "status"
	attrMovingTo    = "moving_to"
	attrLastApplied = "last_applied"
	attrAppliedHash = "applied_hash"
	// attrCommittedHash is, while an apply is in flight, the manifest hash
	// of the owner's last commit: what a CloudFormation rollback of that
	// apply resends (docs/design.md §12).
	attrCommittedHash = "committed_hash"
	// attrFrom is the owner a claim was taken from; kept until that owner's
	// release confirms the handover.
	attrFrom = "taken_from"
	// attrPrior is the config item as it was before the claim's owner took
	// the target: restored when the owner lets the target go (for a
	// taken target, until the giver's release confirms the handover).
	attrPrior = "prior"
	// attrFromPrior is the giver's own prior image of a taken target: what
	// the target was before any of its owners held it. It goes back to the
	// giver with the target, or stays with the taker once the handover is
	// confirmed.
	attrFromPrior = "taken_from_prior"
	// attrFanoutOwed marks a held target whose bucket fan-outs did not
	// finish; the next apply runs them even when its config is unchanged.
	attrFanoutOwed = "fanout_owed"
	// attrAllowTakeOverBy is an owner record's consent: the owner keys
	// that may take its targets (Request.AllowTakeOverBy).
	attrAllowTakeOverBy = "allow_take_over_by"
	// attrTakeOverGranted is the consent an operator gave for the owner
	// (Provisioner.AllowTakeOver), kept across the owner's applies.
	attrTakeOverGranted = "take_over_granted"
)

// Owner record statuses.
const (
	statusApplying = "applying"
	statusApplied  = "applied"
)

// claim is one target's claim item.
type claim struct {
	owner string
	from  string
	// prior is the config item before owner took the target (nil: there
	// was none, or the handover is confirmed).
	prior map[string]types.AttributeValue
	// fromPrior is the giver's prior image (attrFromPrior).
	fromPrior map[string]types.AttributeValue
	pending   bool
	// stored is false for a target of the legacy R10 that no claim item
	// holds yet.
	stored bool
}

// readOwner reads one owner's record in namespace ns.
func (p *Provisioner) readOwner(ctx context.Context, ns, owner string) (State, error) {
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(p.table), Key: schema.ProvisionerOwnerKey(ns, owner).AttributeValues(), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return State{}, fmt.Errorf("provision: read the owner record: %w", err)
	}
	s := State{Owner: owner}
	if len(out.Item) == 0 {
		return s, nil
	}
	s.Found = true
	s.PhysicalID = str(out.Item[attrPhysicalID])
	s.Applying = str(out.Item[attrStatus]) == statusApplying
	s.MovingTo = str(out.Item[attrMovingTo])
	s.LastApplied = str(out.Item[attrLastApplied])
	s.AppliedHash = str(out.Item[attrAppliedHash])
	s.committedHash = str(out.Item[attrCommittedHash])
	s.StackID = str(out.Item[attrStackID])
	if ss, ok := out.Item[attrAllowTakeOverBy].(*types.AttributeValueMemberSS); ok {
		s.AllowTakeOverBy = slices.Sorted(slices.Values(ss.Value))
	}
	if ss, ok := out.Item[attrTakeOverGranted].(*types.AttributeValueMemberSS); ok {
		s.TakeOverGranted = slices.Sorted(slices.Values(ss.Value))
	}
	return s, nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// readClaims reads every claim of namespace ns, strongly consistently. A
// claim item whose key or owner does not parse is skipped and logged.
func (p *Provisioner) readClaims(ctx context.Context, ns string) (map[manifest.Target]claim, error) {
	claims := map[manifest.Target]claim{}
	in := &dynamodb.QueryInput{
		TableName:              aws.String(p.table),
		KeyConditionExpression: aws.String("#0 = :0 AND begins_with(#1, :1)"),
		ExpressionAttributeNames: map[string]string{
			"#0": schema.AttrPK, "#1": schema.AttrSK,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":0": schema.Str(schema.ProvisionerPK(ns)), ":1": schema.Str(schema.SKClaimPrefix),
		},
		ConsistentRead: aws.Bool(true),
	}
	for {
		out, err := p.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("provision: read claims: %w", err)
		}
		for _, it := range out.Items {
			sk := str(it[schema.AttrSK])
			t, ok := parsePendingKey(sk[len(schema.SKClaimPrefix):])
			owner := str(it[attrOwner])
			if !ok || owner == "" {
				p.log.Warn("provision: skipped a malformed claim", "sk", sk)
				continue
			}
			c := claim{owner: owner, from: str(it[attrFrom]), stored: true}
			if m, ok := it[attrPrior].(*types.AttributeValueMemberM); ok {
				c.prior = m.Value
			}
			if m, ok := it[attrFromPrior].(*types.AttributeValueMemberM); ok {
				c.fromPrior = m.Value
			}
			if b, ok := it[attrFanoutOwed].(*types.AttributeValueMemberBOOL); ok {
				c.pending = b.Value
			}
			claims[t] = c
		}
		if len(out.LastEvaluatedKey) == 0 {
			return claims, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

func claimKey(ns string, t manifest.Target) schema.Key {
	return schema.ProvisionerClaimKey(ns, pendingKey(t))
}

// ownerItem is an owner record.
func (p *Provisioner) ownerItem(ns string, req Request, status, hash, committed, lastApplied, movingTo string, granted []string) map[string]types.AttributeValue {
	key := req.Owner.Key()
	it := schema.ProvisionerItemKeys(ns, schema.ProvisionerOwnerKey(ns, key)).Item()
	it[attrOwner] = schema.Str(key)
	it[attrStatus] = schema.Str(status)
	if req.Owner.StackID != "" {
		it[attrStackID] = schema.Str(req.Owner.StackID)
	}
	if req.PhysicalID != "" {
		it[attrPhysicalID] = schema.Str(req.PhysicalID)
	}
	if hash != "" {
		it[attrAppliedHash] = schema.Str(hash)
	}
	if committed != "" && status == statusApplying {
		it[attrCommittedHash] = schema.Str(committed)
	}
	if lastApplied != "" {
		it[attrLastApplied] = schema.Str(lastApplied)
	}
	if movingTo != "" {
		it[attrMovingTo] = schema.Str(movingTo)
	}
	if keys := req.allowTakeOverKeys(); len(keys) > 0 {
		it[attrAllowTakeOverBy] = &types.AttributeValueMemberSS{Value: keys}
	}
	if len(granted) > 0 {
		it[attrTakeOverGranted] = &types.AttributeValueMemberSS{Value: granted}
	}
	return it
}

func (p *Provisioner) putOwner(ctx context.Context, it map[string]types.AttributeValue) error {
	if _, err := p.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(p.table), Item: it}); err != nil {
		return fmt.Errorf("provision: write the owner record: %w", err)
	}
	return nil
}

// MarkMoving records on owner's record in namespace ns that its resource is
// moving to the incarnation movingTo (another namespace or table): written
// before the move's first write, so that a rollback to ns first releases
// what the move wrote (docs/design.md §12). It changes nothing unless the
// record exists and names physicalID.
func (p *Provisioner) MarkMoving(ctx context.Context, ns string, owner Owner, physicalID, movingTo string) error {
	_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.table), Key: schema.ProvisionerOwnerKey(ns, owner.Key()).AttributeValues(),
		UpdateExpression:         aws.String("SET #0 = :0"),
		ConditionExpression:      aws.String("#1 = :1"),
		ExpressionAttributeNames: map[string]string{"#0": attrMovingTo, "#1": attrPhysicalID},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":0": schema.Str(movingTo), ":1": schema.Str(physicalID),
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("provision: mark the move: %w", err)
	}
	return nil
}

// ReadState reads what owner manages in namespace ns: its record and the
// claims it holds.
func (p *Provisioner) ReadState(ctx context.Context, ns string, owner Owner) (State, error) {
	st, err := p.readOwner(ctx, ns, owner.Key())
	if err != nil {
		return State{}, err
	}
	claims, err := p.readClaims(ctx, ns)
	if err != nil {
		return State{}, err
	}
	for t, c := range claims {
		if c.owner == st.Owner {
			st.Targets = append(st.Targets, t)
			if c.pending {
				st.Pending = append(st.Pending, t)
			}
		}
	}
	sortTargets(st.Targets)
	sortTargets(st.Pending)
	return st, nil
}

// maxTransactItems is DynamoDB's limit of items in one transaction.
const maxTransactItems = 100

// claimRaceError reports claim writes whose condition failed: another
// owner took a target between the plan's read and the intent.
type claimRaceError struct{ targets []manifest.Target }

func (e *claimRaceError) Error() string {
	return fmt.Sprintf("provision: %d claim(s) changed hands during the apply", len(e.targets))
}

// claimWrite is one write of the claim bookkeeping.
type claimWrite struct {
	target manifest.Target
	item   types.TransactWriteItem
}

// writeClaims sends ws in transactions of up to 100. strict: a failed
// condition cancels the batch and is returned as a claimRaceError naming
// the targets whose condition failed. Otherwise (commit bookkeeping, where a
// failed condition means another owner now holds the claim and it is not
// ours to change) the batch is sent again item by item, skipping those.
func (p *Provisioner) writeClaims(ctx context.Context, ws []claimWrite, strict bool) error {
	for _, w := range ws {
		switch {
		case w.item.Put != nil:
			w.item.Put.TableName = aws.String(p.table)
		case w.item.Update != nil:
			w.item.Update.TableName = aws.String(p.table)
		case w.item.Delete != nil:
			w.item.Delete.TableName = aws.String(p.table)
		}
	}
	for start := 0; start < len(ws); start += maxTransactItems {
		batch := ws[start:min(start+maxTransactItems, len(ws))]
		items := make([]types.TransactWriteItem, len(batch))
		for i, w := range batch {
			items[i] = w.item
		}
		_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var tc *types.TransactionCanceledException
		if err == nil || !errors.As(err, &tc) || !conditionFailed(tc) {
			if err != nil {
				return fmt.Errorf("provision: write claims: %w", err)
			}
			continue
		}
		if strict {
			race := &claimRaceError{}
			for i, r := range tc.CancellationReasons {
				if i < len(batch) && aws.ToString(r.Code) == "ConditionalCheckFailed" {
					race.targets = append(race.targets, batch[i].target)
				}
			}
			return race
		}
		for _, w := range batch {
			_, err := p.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{w.item}})
			if err != nil && !(errors.As(err, &tc) && conditionFailed(tc)) {
				return fmt.Errorf("provision: write claims: %w", err)
			}
		}
	}
	return nil
}

func conditionFailed(tc *types.TransactionCanceledException) bool {
	for _, r := range tc.CancellationReasons {
		if aws.ToString(r.Code) == "ConditionalCheckFailed" {
			return true
		}
	}
	return false
}

// Claim writes. Every expression uses positional placeholders only.

// putClaim holds t for owner: a new claim (nobody held it: cond
// attribute_not_exists) or a takeover (from held it: cond owner = from).
// prior is the config item as it was, restored on release; fromPrior the
// giver's own prior image.
func putClaim(ns string, t manifest.Target, owner, from string, takeover bool, prior, fromPrior map[string]types.AttributeValue) claimWrite {
	k := claimKey(ns, t)
	it := schema.ProvisionerItemKeys(ns, k).Item()
	it[attrOwner] = schema.Str(owner)
	if takeover && from != "" {
		it[attrFrom] = schema.Str(from)
	}
	if prior != nil {
		it[attrPrior] = &types.AttributeValueMemberM{Value: prior}
	}
	if fromPrior != nil {
		it[attrFromPrior] = &types.AttributeValueMemberM{Value: fromPrior}
	}
	put := &types.Put{Item: it}
	if takeover {
		put.ConditionExpression = aws.String("#0 = :0")
		put.ExpressionAttributeNames = map[string]string{"#0": attrOwner}
		put.ExpressionAttributeValues = map[string]types.AttributeValue{":0": schema.Str(from)}
	} else {
		put.ConditionExpression = aws.String("attribute_not_exists(#0)")
		put.ExpressionAttributeNames = map[string]string{"#0": schema.AttrPK}
	}
	return claimWrite{target: t, item: types.TransactWriteItem{Put: put}}
}

// updateClaim changes a claim that owner holds (cond owner = owner):
// set maps attribute names to values, remove lists attributes to drop.
func updateClaim(ns string, t manifest.Target, condAttr, condValue string, set map[string]types.AttributeValue, remove ...string) claimWrite {
	names := map[string]string{"#c": condAttr}
	values := map[string]types.AttributeValue{":c": schema.Str(condValue)}
	expr := ""
	i := 0
	for _, a := range slices.Sorted(maps.Keys(set)) {
		if expr == "" {
			expr = "SET "
		} else {
			expr += ", "
		}
		n, v := fmt.Sprintf("#%d", i), fmt.Sprintf(":%d", i)
		names[n], values[v] = a, set[a]
		expr += n + " = " + v
		i++
	}
	for j, a := range remove {
		if j == 0 {
			if expr != "" {
				expr += " "
			}
			expr += "REMOVE "
		} else {
			expr += ", "
		}
		n := fmt.Sprintf("#%d", i)
		names[n] = a
		expr += n
		i++
	}
	return claimWrite{target: t, item: types.TransactWriteItem{Update: &types.Update{
		Key: claimKey(ns, t).AttributeValues(), UpdateExpression: aws.String(expr),
		ConditionExpression: aws.String("#c = :c"), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	}}}
}

// deleteClaim drops a claim owner holds.
func deleteClaim(ns string, t manifest.Target, owner string) claimWrite {
	return claimWrite{target: t, item: types.TransactWriteItem{Delete: &types.Delete{
		Key: claimKey(ns, t).AttributeValues(), ConditionExpression: aws.String("#0 = :0"),
		ExpressionAttributeNames:  map[string]string{"#0": attrOwner},
		ExpressionAttributeValues: map[string]types.AttributeValue{":0": schema.Str(owner)},
	}}}
}

func (p *Provisioner) nowString() string { return p.now().UTC().Format(time.RFC3339Nano) }

// OwnerRecord reads owner's record in namespace ns (State.Found is false
// when it has none); its Targets are not read.
func (p *Provisioner) OwnerRecord(ctx context.Context, ns string, owner Owner) (State, error) {
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return State{}, err
	}
	return p.readOwner(ctx, ns, owner.Key())
}

// AllowTakeOver records on owner's record in namespace ns its consent that
// the owners by may take its targets (a later apply of one of them naming
// owner in TakeOverFrom), as an apply with Request.AllowTakeOverBy would,
// and records it in the namespace's audit trail for principal. It is the
// operator's door for an owner that cannot apply again itself (a stack
// that cannot be updated). An owner with no record is an
// *OwnerNotFoundError: with nobody left to consent, a TakeOverFrom naming
// it needs no consent.
func (p *Provisioner) AllowTakeOver(ctx context.Context, ns string, owner Owner, by []Owner, principal string) error {
	if err := schema.ValidateNamespaceID(ns); err != nil {
		return err
	}
	if len(by) == 0 {
		return errors.New("provision: allow take-over: no owner to allow")
	}
	keys := make([]string, 0, len(by))
	for _, o := range by {
		keys = append(keys, o.Key())
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(p.table), Key: schema.ProvisionerOwnerKey(ns, owner.Key()).AttributeValues(),
		UpdateExpression:          aws.String("ADD #a :by"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#a": attrTakeOverGranted, "#pk": schema.AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":by": &types.AttributeValueMemberSS{Value: keys}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &OwnerNotFoundError{Namespace: ns, Owner: owner}
	}
	if err != nil {
		return fmt.Errorf("provision: allow take-over: %w", err)
	}
	return p.controls.Record(ctx, ns, control.AuditEvent{EntityID: control.SystemTrail, Action: "limits_take_over_allowed",
		Principal: principal, Details: map[string]string{"owner": owner.Key(), "allowed": strings.Join(keys, ", ")}})
}

// OwnerNotFoundError is an owner with no record in a namespace: it holds
// nothing there.
type OwnerNotFoundError struct {
	Namespace string
	Owner     Owner
}

// Error implements error.
func (e *OwnerNotFoundError) Error() string {
	return "provision: namespace " + e.Namespace + ": " + e.Owner.Key() + " holds nothing here (no owner record)"
}
