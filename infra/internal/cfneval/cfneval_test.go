package cfneval

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

const sample = `{
 "Parameters": {
  "On": {"Type": "String", "Default": "true"},
  "Name": {"Type": "String", "Default": ""},
  "Format": {"Type": "String", "Default": "pre-{}-post"},
  "Size": {"Type": "Number", "Default": 256}
 },
 "Conditions": {
  "IsOn": {"Fn::Equals": [{"Ref": "On"}, "true"]},
  "HasName": {"Fn::Not": [{"Fn::Equals": [{"Ref": "Name"}, ""]}]},
  "Both": {"Fn::And": [{"Condition": "IsOn"}, {"Condition": "HasName"}]},
  "Either": {"Fn::Or": [{"Condition": "IsOn"}, {"Condition": "HasName"}]}
 },
 "Resources": {
  "Table": {"Type": "T", "DeletionPolicy": "Retain", "Properties": {"Size": {"Ref": "Size"}, "N": 1.5, "B": true}},
  "Thing": {"Type": "X", "Condition": "Both", "Properties": {}},
  "Other": {"Type": "Y", "Condition": "Either", "DependsOn": ["Table"], "Properties": {
   "Name": {"Fn::If": ["HasName", {"Ref": "Name"}, {"Ref": "AWS::NoValue"}]},
   "List": [{"Fn::If": ["HasName", "x", {"Ref": "AWS::NoValue"}]}, "y"],
   "Arn": {"Fn::Sub": "arn:${AWS::Partition}:t:${AWS::Region}:${AWS::AccountId}:${Table}/${Table.Arn}/${!Lit}"},
   "Joined": {"Fn::Join": ["", [{"Select": 0}, {"Ref": "AWS::StackName"}]]},
   "Fmt": {"Fn::Join": ["", [{"Fn::Select": [0, {"Fn::Split": ["{}", {"Ref": "Format"}]}]}, "NAME", {"Fn::Select": [1, {"Fn::Split": ["{}", {"Ref": "Format"}]}]}]]},
   "Att": {"Fn::GetAtt": ["Table", "StreamArn"]},
   "Vars": {"Fn::Sub": ["${A}-${B}", {"A": {"Ref": "Table"}, "B": "b"}]}
  }}
 },
 "Outputs": {
  "Out": {"Value": {"Ref": "Table"}, "Export": {"Name": {"Fn::Sub": "${AWS::StackName}-Out"}}, "Description": "d"},
  "Gone": {"Condition": "Both", "Value": "v"}
 }
}`

func load(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(sample), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestEvaluateDefaults(t *testing.T) {
	tpl := load(t)
	// Joined uses an unknown key on purpose to see the error; drop it here.
	delete(tpl["Resources"].(map[string]any)["Other"].(map[string]any)["Properties"].(map[string]any), "Joined")
	s, err := Evaluate(tpl, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Resources["Thing"]; ok {
		t.Error("Thing is under a false condition")
	}
	tbl := s.Resources["Table"]
	if tbl.DeletionPolicy != "Retain" || !reflect.DeepEqual(tbl.Properties, map[string]any{"Size": "256", "N": "1.5", "B": "true"}) {
		t.Errorf("Table: %+v", tbl)
	}
	o := s.Resources["Other"]
	want := map[string]any{
		"List": []any{"y"},
		"Arn":  "arn:aws:t:eu-west-1:123456789012:{Ref:Table}/{Table.Arn}/${Lit}",
		"Fmt":  "pre-NAME-post",
		"Att":  "{Table.StreamArn}",
		"Vars": "{Ref:Table}-b",
	}
	if !reflect.DeepEqual(o.Properties, want) || !reflect.DeepEqual(o.DependsOn, []string{"Table"}) {
		t.Errorf("Other:\n got %#v %v\nwant %#v", o.Properties, o.DependsOn, want)
	}
	if got := s.Outputs["Out"]; got != (Output{Value: "{Ref:Table}", Export: StackName + "-Out", Description: "d"}) {
		t.Errorf("Out: %+v", got)
	}
	if _, ok := s.Outputs["Gone"]; ok {
		t.Error("Gone is under a false condition")
	}
}

func TestEvaluateParameters(t *testing.T) {
	tpl := load(t)
	delete(tpl["Resources"].(map[string]any)["Other"].(map[string]any)["Properties"].(map[string]any), "Joined")
	s, err := Evaluate(tpl, map[string]string{"On": "false", "Name": "n"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Resources["Thing"]; ok {
		t.Error("Both needs On")
	}
	o, ok := s.Resources["Other"]
	if !ok || o.Properties["Name"] != "n" || !reflect.DeepEqual(o.Properties["List"], []any{"x", "y"}) {
		t.Errorf("Other: %+v", o)
	}
	if _, ok := s.Outputs["Gone"]; ok {
		t.Error("Gone needs On")
	}
}

func TestEvaluateErrors(t *testing.T) {
	if _, err := Evaluate(load(t), nil); err == nil || !strings.Contains(err.Error(), "Joined") {
		t.Errorf("an unknown function inside Join: %v", err)
	}
	if _, err := Evaluate(load(t), map[string]string{"Nope": "x"}); err == nil {
		t.Error("an unknown parameter is an error")
	}
	bad := load(t)
	bad["Resources"].(map[string]any)["Table"].(map[string]any)["Properties"] = map[string]any{"X": map[string]any{"Ref": "Missing"}}
	if _, err := Evaluate(bad, nil); err == nil {
		t.Error("a Ref to nothing is an error")
	}
}
