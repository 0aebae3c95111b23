package sriov

import "github.com/virtnet/virtnet/api"

// Binding is the sriov binding method. Its zero value is ready to use.
type Binding struct{}

// Method is "sriov".
func (Binding) Method() string { return api.BindingSRIOV }
