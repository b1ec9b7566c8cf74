# fusee ring file: one namespace's placement policy (docs/rings.md).
# Change it with `fusee ring` commands: published rings are sealed.
fusee-ring 1
namespace payments
shards 8
revision 9
current-epoch 2

cell pay-a
cell pay-b
cell pay-c

epoch 0 retired
  0-7 pay-a

epoch 1 draining
  0-3 pay-a
  4-7 pay-b@us-east

epoch 2 open
  4-5 pay-b@us-east
  0-2 pay-a
  6-7 pay-c@eu-west
  3 pay-b@us-east
