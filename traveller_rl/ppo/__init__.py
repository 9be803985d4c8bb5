"""The batched masked-PPO trainer on the compiled core (``traveller train ppo``)."""
