import { useState } from "react";
import { motion } from "motion/react";
import { BarChart, Bar, XAxis, YAxis } from "recharts";
import { Star } from "lucide-react";

const USAGE = [
  { day: "Mon", calls: 120 },
  { day: "Tue", calls: 180 },
  { day: "Wed", calls: 150 },
];

export default function PricingToggle() {
  const [yearly, setYearly] = useState(false);
  const price = yearly ? 240 : 24;
  return (
    <div className="mx-auto max-w-lg p-8">
      <div className="flex items-center gap-3">
        <span>Monthly</span>
        <button role="switch" aria-checked={yearly} onClick={() => setYearly(!yearly)}
          className="relative h-6 w-12 rounded-full bg-slate-300">
          <motion.span layout className="absolute top-1 h-4 w-4 rounded-full bg-white"
            style={{ left: yearly ? 28 : 4 }} transition={{ type: "spring", stiffness: 500, damping: 30 }} />
        </button>
        <span>Yearly</span>
      </div>
      <h2 className="mt-6 flex items-center gap-2 text-3xl font-bold">
        <Star className="h-6 w-6 fill-yellow-400 text-yellow-400" /> ${price} / {yearly ? "year" : "month"}
      </h2>
      <BarChart width={400} height={160} data={USAGE}>
        <XAxis dataKey="day" />
        <YAxis />
        <Bar dataKey="calls" fill="#6366f1" radius={[4, 4, 0, 0]} />
      </BarChart>
    </div>
  );
}
