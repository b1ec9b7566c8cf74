# fusee ring file: one namespace's placement policy (docs/rings.md).
# Change it with `fusee ring` commands: published rings are sealed.
fusee-ring 2
namespace payments
revision 9
current-epoch 2

cell pay-a
cell pay-b
cell pay-c

epoch 0 retired shards=0-7
  0-7 pay-a

epoch 1 draining shards=0-7
  0-3 pay-a
  4-7 pay-b@us-east

epoch 2 open shards=0-7
  4-5 pay-b@us-east
  0-2 pay-a
  6-7 pay-c@eu-west
  3 pay-b@us-east
