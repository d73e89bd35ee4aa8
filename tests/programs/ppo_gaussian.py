# PPO with a Gaussian policy as the "PPO from scratch" tutorials and CleanRL's ppo_continuous
# write it: an Agent with a critic, an actor_mean network and a state-independent
# actor_logstd nn.Parameter(torch.zeros(1, action_dim)), get_action_and_value with
# Normal(action_mean, action_std) (action_logstd.expand_as(action_mean), torch.exp),
# probs.log_prob(action).sum(1) and probs.entropy().sum(1); layer_init with
# torch.nn.init.orthogonal_(layer.weight, std) and constant_ bias; GAE computed backwards
# with `nextnonterminal`; minibatches from torch.randperm; the clipped surrogate
# torch.max(pg_loss1, pg_loss2).mean() with ratio = logratio.exp(), approx_kl
# ((ratio - 1) - logratio).mean(), the clipfracs; clip_grad_norm_(max_grad_norm) and Adam
# with eps=1e-5 and a linearly annealed lr. The environment: a 1-D point that should move to
# the origin (reward -x^2 - 0.1 a^2), batched as a vector env of num_envs copies.
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch.distributions.normal import Normal


class PointEnv:
    """num_envs points x in [-2, 2]; the action moves x by 0.5 * clip(a, -1, 1); episodes of
    20 steps; reward -(x^2) - 0.1 a^2."""

    def __init__(self, num_envs, seed=0):
        self.num_envs = num_envs
        self.rng = np.random.RandomState(seed)
        self.x = self.rng.uniform(-2, 2, num_envs)
        self.t = np.zeros(num_envs, dtype=np.int64)

    def reset(self):
        return self.x[:, None].astype(np.float32)

    def step(self, action):
        a = np.clip(action[:, 0], -1, 1)
        self.x = np.clip(self.x + 0.5 * a, -3, 3)
        reward = -(self.x ** 2) - 0.1 * a ** 2
        self.t += 1
        done = self.t >= 20
        self.x[done] = self.rng.uniform(-2, 2, done.sum())
        self.t[done] = 0
        return self.x[:, None].astype(np.float32), reward.astype(np.float32), done


def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
    torch.nn.init.orthogonal_(layer.weight, std)
    torch.nn.init.constant_(layer.bias, bias_const)
    return layer


class Agent(nn.Module):
    def __init__(self, obs_dim=1, action_dim=1):
        super().__init__()
        self.critic = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 32)),
            nn.Tanh(),
            layer_init(nn.Linear(32, 32)),
            nn.Tanh(),
            layer_init(nn.Linear(32, 1), std=1.0),
        )
        self.actor_mean = nn.Sequential(
            layer_init(nn.Linear(obs_dim, 32)),
            nn.Tanh(),
            layer_init(nn.Linear(32, 32)),
            nn.Tanh(),
            layer_init(nn.Linear(32, action_dim), std=0.01),
        )
        self.actor_logstd = nn.Parameter(torch.zeros(1, action_dim))

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action=None):
        action_mean = self.actor_mean(x)
        action_logstd = self.actor_logstd.expand_as(action_mean)
        action_std = torch.exp(action_logstd)
        probs = Normal(action_mean, action_std)
        if action is None:
            action = probs.sample()
        return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)


def main(num_iterations=12, num_envs=8, num_steps=32, update_epochs=4, num_minibatches=4,
         learning_rate=3e-3, gamma=0.9, gae_lambda=0.95, clip_coef=0.2, ent_coef=0.0,
         vf_coef=0.5, max_grad_norm=0.5, seed=0):
    torch.manual_seed(seed)
    envs = PointEnv(num_envs, seed)
    agent = Agent()
    optimizer = optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches

    obs = torch.zeros((num_steps, num_envs, 1))
    actions = torch.zeros((num_steps, num_envs, 1))
    logprobs = torch.zeros((num_steps, num_envs))
    rewards = torch.zeros((num_steps, num_envs))
    dones = torch.zeros((num_steps, num_envs))
    values = torch.zeros((num_steps, num_envs))

    next_obs = torch.Tensor(envs.reset())
    next_done = torch.zeros(num_envs)
    mean_rewards, stats = [], []
    for iteration in range(1, num_iterations + 1):
        # Annealing the rate if instructed to do so.
        frac = 1.0 - (iteration - 1.0) / num_iterations
        lrnow = frac * learning_rate
        optimizer.param_groups[0]["lr"] = lrnow

        for step in range(0, num_steps):
            obs[step] = next_obs
            dones[step] = next_done

            # ALGO LOGIC: action logic
            with torch.no_grad():
                action, logprob, _, value = agent.get_action_and_value(next_obs)
                values[step] = value.flatten()
            actions[step] = action
            logprobs[step] = logprob

            next_obs, reward, next_done = envs.step(action.cpu().numpy())
            rewards[step] = torch.tensor(reward).view(-1)
            next_obs, next_done = torch.Tensor(next_obs), torch.Tensor(next_done.astype(np.float32))
        mean_rewards.append(rewards.mean().item())

        # bootstrap value if not done
        with torch.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        # flatten the batch
        b_obs = obs.reshape((-1, 1))
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1, 1))
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)

        # Optimizing the policy and value network
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            b_inds = torch.randperm(batch_size).numpy()
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]

                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], b_actions[mb_inds])
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()

                with torch.no_grad():
                    # calculate approx_kl http://joschu.net/blog/kl-approx.html
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]

                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)

                # Policy loss
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = torch.max(pg_loss1, pg_loss2).mean()

                # Value loss
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + torch.clamp(
                    newvalue - b_values[mb_inds],
                    -clip_coef,
                    clip_coef,
                )
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss_max = torch.max(v_loss_unclipped, v_loss_clipped)
                v_loss = 0.5 * v_loss_max.mean()

                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef

                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()

        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        stats.append({"approx_kl": approx_kl.item(), "old_approx_kl": old_approx_kl.item(),
                      "clipfrac": float(np.mean(clipfracs)), "explained_var": explained_var,
                      "lr": lrnow})
    return agent, mean_rewards, stats


if __name__ == "__main__":
    main()
